package suprecord

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// MaxRecords bounds the records List reads (docs/configuration.md#bounds);
// more are left out, oldest pid order first kept.
const MaxRecords = 256

// maxRecordBytes bounds one record file: a record is a few hundred bytes.
const maxRecordBytes = 16 << 10

// Record is one running supervisor.
type Record struct {
	Socket  string    `json:"socket"`
	PID     int       `json:"pid"`
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
}

// Dir is where the records live: <state>/supervisors.
func Dir(state string) string { return filepath.Join(state, "supervisors") }

// Register writes r (PID defaults to this process) under state and
// returns the function that removes it again. The directory is private
// (0700, this user's); the file is written atomically, 0600.
func Register(state string, r Record) (remove func(), err error) {
	if state == "" {
		return nil, fmt.Errorf("no state directory for the supervisor record; set HOME or XDG_STATE_HOME")
	}
	if r.PID == 0 {
		r.PID = os.Getpid()
	}
	if r.Started.IsZero() {
		r.Started = time.Now().UTC()
	}
	if abs, err := filepath.Abs(r.Socket); err == nil {
		r.Socket = abs
	}
	dir := Dir(state)
	if err := safefile.PrivateDir(dir); err != nil {
		return nil, fmt.Errorf("supervisor record: %w", err)
	}
	data, _ := json.Marshal(r)
	path := filepath.Join(dir, strconv.Itoa(r.PID)+".json")
	if err := safefile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("supervisor record: %w", err)
	}
	return func() { _ = os.Remove(path) }, nil
}

// List reads the records under state, in pid order. A record whose process
// is gone is removed and not returned; an unreadable one is skipped. A
// missing directory is no records.
func List(state string) []Record {
	if state == "" {
		return nil
	}
	dir := Dir(state)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Record
	for _, e := range entries {
		name := e.Name()
		digits, ok := strings.CutSuffix(name, ".json")
		pid, err := strconv.Atoi(digits)
		if !ok || err != nil || pid <= 0 || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		if !safefile.ProcessAlive(pid) {
			_ = os.Remove(path)
			continue
		}
		r, ok := read(path)
		if !ok || r.PID != pid || r.Socket == "" {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	if len(out) > MaxRecords {
		out = out[:MaxRecords]
	}
	return out
}

// read decodes one record file, refusing a symlink, another user's file
// and an oversized one.
func read(path string) (Record, bool) {
	if uid, ok := safefile.Owner(path); !ok || uid != os.Geteuid() {
		return Record{}, false
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return Record{}, false
	}
	defer f.Close()
	var r Record
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes+1))
	if err != nil || len(data) > maxRecordBytes || json.Unmarshal(data, &r) != nil {
		return Record{}, false
	}
	return r, true
}
