package stable

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/internal/regularfile"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// The supervisor's durable state (docs/stable.md#surviving-a-restart): one directory per control
// socket under the user's state directory, <state>/stable/<key>/, holding
// state.json. It says, for every runtime the supervisor has, what a new
// supervisor on the same socket needs after this one died without a
// shutdown (SIGKILL, OOM, a crash): the spawn, the ids and paths, the
// plugin process to re-attach to, the session, the last seq written and
// the permission requests still pending. A clean shutdown removes it: then
// nothing is left to recover.
const (
	// StateSchema names the file's format; StateVersion is its version.
	// A file of another schema or version is refused, never guessed at.
	StateSchema  = "avenor.stable.state"
	StateVersion = 1
	// StateFileName is the file in the state directory.
	StateFileName = "state.json"
	// maxStateFile bounds what is read back: a runtime takes well under a
	// KiB, so 64 MiB is tens of thousands of runtimes.
	maxStateFile = 64 << 20
)

// ErrState is wrapped by every refusal of a state file.
var ErrState = errors.New("supervisor state file refused")

// supervisorState is state.json: the supervisor that wrote it (Socket,
// PID, RunID) and its runtimes' records.
type supervisorState struct {
	Schema   string           `json:"schema"`
	Version  int              `json:"version"`
	Socket   string           `json:"socket"`
	PID      int              `json:"pid"`
	RunID    string           `json:"run_id"`
	NextN    int              `json:"next_n"`
	Runtimes []hostrun.Record `json:"runtimes"`
}

// StateDirFor is the supervisor state directory of socket under the user's
// state directory: <state>/stable/<first 16 hex digits of the SHA-256 of
// the cleaned absolute socket path>.
func StateDirFor(stateRoot, socket string) string {
	abs, err := filepath.Abs(socket)
	if err != nil {
		abs = socket
	}
	sum := sha256.Sum256([]byte(filepath.Clean(abs)))
	return filepath.Join(stateRoot, "stable", hex.EncodeToString(sum[:8]))
}

// store is where the supervisor's durable state sits: its runtimes'
// records (spawn params, session, state) and the reattach configs of their
// plugins, as Nomad's driver manager keeps plugin state. Recovery loads
// the records and restores a runtime (host/run.Restore) for each; the
// saver writes a snapshot when the state changed.
type store interface {
	load() (s supervisorState, ok bool, err error)
	save(snap func() supervisorState) error
	remove() error
	path() string
}

// stateStore is the store of state.json in one directory.
type stateStore struct {
	dir string
	mu  sync.Mutex // one write at a time, the newest snapshot last
	// write replaces a file atomically; safefile.WriteFile, or a failing
	// one in tests (a full disk).
	write func(path string, data []byte, perm os.FileMode) error
}

// openStateStore makes dir (and its parent) private directories of ours.
func openStateStore(dir string) (*stateStore, error) {
	for _, d := range []string{filepath.Dir(filepath.Dir(dir)), filepath.Dir(dir), dir} {
		if err := safefile.PrivateDir(d); err != nil {
			return nil, fmt.Errorf("supervisor state directory: %w", err)
		}
	}
	return &stateStore{dir: dir, write: safefile.WriteFile}, nil
}

func (st *stateStore) path() string { return filepath.Join(st.dir, StateFileName) }

// save replaces state.json with snap() atomically (temp file, fsync,
// rename): a reader, or a supervisor started after this one was killed
// mid-write, sees the previous file or the new one, never half of one.
// snap runs under the store's lock, so concurrent saves write their
// snapshots in the order they took them.
func (st *stateStore) save(snap func() supervisorState) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := snap()
	s.Schema, s.Version = StateSchema, StateVersion
	s.Runtimes = append([]hostrun.Record(nil), s.Runtimes...)
	sort.Slice(s.Runtimes, func(i, j int) bool { return s.Runtimes[i].N < s.Runtimes[j].N })
	data, err := encodeState(s)
	if err != nil {
		return err
	}
	return st.write(st.path(), data, 0o600)
}

// encodeState is s as state.json's bytes, compact and ending in a newline:
// the file is rewritten whole on every change, and indenting costs a
// second pass over it and a third of its size. Each record's spawn is
// spliced in as it is, not re-validated as json.Marshal does a
// json.RawMessage: it is json.Marshal's own output (runtime.setParams) or
// a file's that decoded, and with 200 runtimes spawned at once, each with
// a 5 KB prompt, validating them again was most of each write, and every
// spawn waits for one (saveSync). The bytes are those json.Marshal(s)
// gives (TestEncodeStateIsMarshal).
func encodeState(s supervisorState) ([]byte, error) {
	records := s.Runtimes
	s.Runtimes = nil
	head, err := json.Marshal(s)
	if err != nil || records == nil {
		return append(head, '\n'), err
	}
	buf, ok := bytes.CutSuffix(head, []byte("null}"))
	if !ok {
		return nil, fmt.Errorf("encode state: %q does not end in its runtimes", head)
	}
	size := len(buf) + 3
	for _, r := range records {
		size += len(r.Spawn) + 512
	}
	buf = append(make([]byte, 0, size), buf...)
	buf = append(buf, '[')
	for i, r := range records {
		if i > 0 {
			buf = append(buf, ',')
		}
		spawn := r.Spawn
		r.Spawn = nil
		rec, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		// The first "spawn":null is the record's own member: members
		// before it hold strings and numbers only, and a string's quotes
		// are escaped.
		at := bytes.Index(rec, spawnNull)
		if at < 0 {
			return nil, fmt.Errorf("encode state: record %s has no spawn member", r.ID)
		}
		if len(spawn) == 0 {
			spawn = []byte("null")
		}
		at += len(spawnNull) - len("null")
		buf = append(append(append(buf, rec[:at]...), spawn...), rec[at+len("null"):]...)
	}
	return append(buf, "]}\n"...), nil
}

var spawnNull = []byte(`"spawn":null`)

// remove deletes state.json: the supervisor stopped everything itself.
func (st *stateStore) remove() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	err := os.Remove(st.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// load reads state.json; ok is false when there is none. A file that does
// not parse, or is of another schema or version, is refused with an error
// naming it and what to do.
func (st *stateStore) load() (s supervisorState, ok bool, err error) {
	path := st.path()
	data, err := regularfile.ReadFileMax(path, maxStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("%w: %s: %v; move it away (the runtimes it lists are then not recovered) and start again", ErrState, path, err)
	}
	return decodeState(path, data)
}

// decodeState parses a state file's bytes; path names it in errors.
func decodeState(path string, data []byte) (supervisorState, bool, error) {
	var s supervisorState
	var head struct {
		Schema  *string `json:"schema"`
		Version *int    `json:"version"`
	}
	fix := "move it away (the runtimes it lists are then not recovered: their plugins stop by themselves within the linger window) and start again"
	if err := json.Unmarshal(data, &head); err != nil {
		return s, false, fmt.Errorf("%w: %s is corrupt (%v); %s", ErrState, path, err, fix)
	}
	if head.Schema == nil || *head.Schema != StateSchema || head.Version == nil {
		return s, false, fmt.Errorf("%w: %s is not an avenor supervisor state file (schema %q expected); %s", ErrState, path, StateSchema, fix)
	}
	if *head.Version != StateVersion {
		return s, false, fmt.Errorf("%w: %s has state version %d and this avenor reads version %d; run the avenor that wrote it on this socket, or %s",
			ErrState, path, *head.Version, StateVersion, fix)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, false, fmt.Errorf("%w: %s is corrupt (%v); %s", ErrState, path, err, fix)
	}
	seen := map[string]bool{}
	for _, r := range s.Runtimes {
		var p SpawnParams
		if err := decodeSpawn(r.Spawn, &p); err != nil {
			return s, false, fmt.Errorf("%w: %s is corrupt (runtime %q: spawn: %v); %s", ErrState, path, r.ID, err, fix)
		}
		if r.ID == "" || r.ID != runtimeID(r.N) || seen[r.ID] || r.OnEvent == "" || r.Sentinel == "" {
			return s, false, fmt.Errorf("%w: %s is corrupt (runtime %q: missing or duplicate id or paths); %s", ErrState, path, r.ID, fix)
		}
		seen[r.ID] = true
	}
	return s, true, nil
}
