package regularfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// Create creates or truncates path for writing, as os.Create does, when it
// is a regular file or does not exist yet (symlinks are followed). Anything
// else is refused before it is opened, wrapping ErrNotRegular: a named pipe
// would block the open until a reader came and every write once the reader
// stopped reading, a device would swallow or refuse the lines (/dev/null,
// /dev/full). The open itself is O_NONBLOCK, so a pipe put in the path's
// place after the check fails instead of blocking, and the opened file is
// checked again.
func Create(path string) (*os.File, error) {
	return createChecked(path, func() (*os.File, error) {
		return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o666)
	})
}

// createChecked refuses a path that is not a regular file before open
// runs, and what open opened if it is not one either (a pipe put in the
// path's place in between; open must not block on one).
func createChecked(path string, open func() (*os.File, error)) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, notRegular(path, fi.Mode())
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

func notRegular(path string, m fs.FileMode) error {
	return &NotRegularError{Path: path, What: describe(m)}
}

// CreateLog opens the event log a harness named (--on-event, a spawn's
// on_event): Create's refusal of pipes and devices, with sdk/safefile's
// rules for shared directories (a planted symlink or another user's file
// in a directory others may write is refused). /dev/null alone among the
// devices is taken, as harnesses pass it to discard the log: it can
// neither block nor fail.
func CreateLog(path string) (*os.File, error) {
	if path == os.DevNull {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	// safefile opens without blocking on a pipe.
	return createChecked(path, func() (*os.File, error) { return safefile.OpenTrunc(path, 0o666) })
}
