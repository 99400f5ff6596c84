package echo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// store keeps echo's sessions (id → turns taken) in one JSON file in the
// plugin's state directory, so a fresh plugin process can resume a session:
// that is what makes ResumeScope cross_process honest. With no state
// directory nothing is kept and nothing can be resumed.
type store struct{ dir string }

// update loads the sessions, lets fn change them and saves them atomically
// (temp file + rename), holding a file lock so that two plugin processes
// never lose each other's updates. An error from fn is returned unchanged
// and nothing is written.
func (st store) update(fn func(turns map[string]int) error) error {
	turns := map[string]int{}
	if st.dir == "" {
		return fn(turns)
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return stateErr(err)
	}
	lock, err := os.OpenFile(filepath.Join(st.dir, "echo-sessions.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return stateErr(err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return stateErr(err)
	}

	path := filepath.Join(st.dir, "echo-sessions.json")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return stateErr(err)
	default:
		if err := json.Unmarshal(data, &turns); err != nil {
			return stateErr(fmt.Errorf("%s: %w", path, err))
		}
	}
	if err := fn(turns); err != nil {
		return err
	}
	if data, err = json.Marshal(turns); err != nil {
		return stateErr(err)
	}
	tmp := path + ".tmp" // safe: we hold the lock
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return stateErr(err)
	}
	return stateErr(os.Rename(tmp, path))
}

// stateErr blames the user: an unreadable or unwritable state directory is
// theirs to fix.
func stateErr(err error) error {
	if err == nil {
		return nil
	}
	return runtime.Errorf(runtime.FaultUser, "echo session state: %v", err)
}
