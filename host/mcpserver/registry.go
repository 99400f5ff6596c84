package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// Record is what the registry keeps of one run: enough to find it again on
// its supervisor (runtime id, socket, the supervisor's own run id), to read
// it when the supervisor no longer holds it (event log, sentinel), and to
// follow it up with the same identity.
type Record struct {
	RunID     string `json:"run_id"`
	Label     string `json:"label"`
	RuntimeID string `json:"runtime_id"`
	SessionID string `json:"session_id,omitempty"`
	// Supervisor is the supervisor's socket path (the tools' supervisor_id);
	// SupervisorRunID its supervisor_run_id when the run was spawned: a
	// supervisor started anew at the same socket numbers its runtimes from
	// rt_1 again, so a record of an older one never reads a newer one's.
	Supervisor      string `json:"supervisor"`
	SupervisorRunID string `json:"supervisor_run_id,omitempty"`
	EventLog        string `json:"event_log"`
	Sentinel        string `json:"sentinel"`
	Dir             string `json:"dir"`
	Agent           string `json:"agent,omitempty"`
	Model           string `json:"model,omitempty"`
	Backend         string `json:"backend,omitempty"`
	Thinking        string `json:"thinking,omitempty"`
	AgentProfile    string `json:"agent_profile,omitempty"`
	RosterFile      string `json:"roster_file,omitempty"`
	RosterEntry     string `json:"roster_entry,omitempty"`
	AutoApprove     bool   `json:"auto_approve,omitempty"`
	Questions       bool   `json:"questions,omitempty"`
	// Adopted: a runtime this server did not spawn (found in the
	// supervisor's list); its event log and sentinel are not ours to delete.
	Adopted bool `json:"adopted,omitempty"`
	// FollowUpOf is the run this one continues; FollowUps the runs that
	// continue it, oldest first.
	FollowUpOf string    `json:"follow_up_of,omitempty"`
	FollowUps  []string  `json:"follow_ups,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	// Launch is the run's permission mode and launch context as its spawn
	// gave them, nil for none; a follow-up spawns with the same.
	Launch *LaunchParams `json:"launch,omitempty"`
}

// registry is the run records of one supervisor socket: <state>/mcp/<key>/
// holds runs/<run_id>.json and the runs' artifacts
// (artifacts/avenor-run-<run_id>.{log,done}); <key> is a hash of the
// socket's path. Every directory is private (0700) and every record is
// replaced atomically, so a reader never sees half a record and another
// user can neither read nor plant one.
type registry struct {
	root string // <state>/mcp
	dir  string // <root>/<key>
	sock string // the supervisor socket it belongs to
}

// registryKey names a socket's registry directory.
func registryKey(socket string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(socket)))
	return hex.EncodeToString(sum[:8])
}

func openRegistry(stateDir, socket string) (*registry, error) {
	if stateDir == "" {
		return nil, errors.New("no state directory for the run registry; set HOME or XDG_STATE_HOME")
	}
	r := &registry{root: filepath.Join(stateDir, "mcp"), sock: socket}
	r.dir = filepath.Join(r.root, registryKey(socket))
	for _, d := range []string{r.root, r.dir, r.runsDir(), r.artifactsDir()} {
		if err := safefile.PrivateDir(d); err != nil {
			return nil, fmt.Errorf("run registry: %w", err)
		}
	}
	// The socket this registry belongs to, for a human looking at the
	// directory; nothing reads it back.
	_ = safefile.WriteFile(filepath.Join(r.dir, "socket"), []byte(socket+"\n"), 0o600)
	return r, nil
}

func (r *registry) runsDir() string      { return filepath.Join(r.dir, "runs") }
func (r *registry) artifactsDir() string { return filepath.Join(r.dir, "artifacts") }

// artifacts are the event log and sentinel paths of a new run.
func (r *registry) artifacts(runID string) (log, sentinel string) {
	base := filepath.Join(r.artifactsDir(), "avenor-run-"+runID)
	return base + ".log", base + ".done"
}

// validRunID: run ids become file names, so only the two forms a run id
// takes are looked up by name (a label never): the supervisor's (16
// lowercase hex digits, the run_id its events carry) and the UUID that
// newRunID makes when a supervisor names none (and that records written by
// an older avenor mcp hold).
func validRunID(id string) bool {
	switch len(id) {
	case 16:
		for _, c := range id {
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
		return true
	case 36:
	default:
		return false
	}
	for i, c := range id {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case (c < '0' || c > '9') && (c < 'a' || c > 'f'):
			return false
		}
	}
	return true
}

// newRunID is a random (version 4) UUID, the original's run id format:
// the name of a new run's artifacts, and its run id when the supervisor
// gives none.
func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func (r *registry) store(rec *Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFile(filepath.Join(r.runsDir(), rec.RunID+".json"), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("run registry: store run %s: %w", rec.RunID, err)
	}
	return nil
}

func readRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("run registry: %s: %w", path, err)
	}
	return &rec, nil
}

// get returns the record of runID, or nil when there is none.
func (r *registry) get(runID string) (*Record, error) {
	if !validRunID(runID) {
		return nil, nil
	}
	rec, err := readRecord(filepath.Join(r.runsDir(), runID+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rec, err
}

// all returns every record, oldest first. A record that cannot be read is
// skipped: one damaged file must not hide every other run.
func (r *registry) all() []*Record {
	return recordsIn(r.runsDir())
}

func recordsIn(dir string) []*Record {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	out := make([]*Record, 0, len(names))
	for _, n := range names {
		if rec, err := readRecord(n); err == nil && rec.RunID != "" {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].RunID < out[j].RunID
	})
	return out
}

// elsewhere looks runID up in the registries of other sockets: an `avenor
// mcp` restarted with another default socket (its pid is in the name) still
// finds the runs the previous one spawned.
func (r *registry) elsewhere(runID string) *Record {
	if !validRunID(runID) {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(r.root, "*", "runs", runID+".json"))
	for _, p := range paths {
		if strings.HasPrefix(p, r.dir+string(filepath.Separator)) {
			continue
		}
		if rec, err := readRecord(p); err == nil {
			return rec
		}
	}
	return nil
}

// remove deletes a run's record, its event log and its sentinel, and
// returns the artifact paths it removed.
func (r *registry) remove(rec *Record) []string {
	var cleaned []string
	paths := []string{rec.Sentinel, rec.EventLog}
	if rec.Adopted {
		paths = nil
	}
	for _, p := range paths {
		if p != "" && os.Remove(p) == nil {
			cleaned = append(cleaned, p)
		}
	}
	_ = os.Remove(filepath.Join(r.runsDir(), rec.RunID+".json"))
	return cleaned
}
