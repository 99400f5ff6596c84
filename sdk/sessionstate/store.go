package sessionstate

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

// Store maps session ids to records of type T in <Dir>/<Name>.json. With no
// Dir nothing is kept and nothing can be resumed.
type Store[T any] struct {
	Dir  string // the plugin's state directory
	Name string // file stem, e.g. "echo-sessions"
}

// Update loads the records, lets fn change them and saves them atomically
// (temp file + rename), holding a file lock so that two plugin processes
// never lose each other's updates. An error from fn is returned unchanged
// and nothing is written; other failures are the user's to fix (an
// unreadable or unwritable state directory) and say so.
func (s Store[T]) Update(fn func(records map[string]T) error) error {
	records := map[string]T{}
	if s.Dir == "" {
		return fn(records)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return s.err(err)
	}
	lock, err := os.OpenFile(filepath.Join(s.Dir, s.Name+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return s.err(err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return s.err(err)
	}
	path := filepath.Join(s.Dir, s.Name+".json")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return s.err(err)
	default:
		if err := json.Unmarshal(data, &records); err != nil {
			return s.err(fmt.Errorf("%s: %w", path, err))
		}
	}
	if err := fn(records); err != nil {
		return err
	}
	if data, err = json.Marshal(records); err != nil {
		return s.err(err)
	}
	tmp := path + ".tmp" // safe: we hold the lock
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return s.err(err)
	}
	return s.err(os.Rename(tmp, path))
}

func (s Store[T]) err(err error) error {
	if err == nil {
		return nil
	}
	return runtime.Errorf(runtime.FaultUser, "%s state: %v", s.Name, err)
}
