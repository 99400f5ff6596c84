package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by every refusal of a path that exists but is not
// a regular file (a directory, named pipe, device or socket).
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading when it is a regular file (symlinks are
// followed). It opens with O_NONBLOCK, so a named pipe without a writer
// does not block the open, then refuses anything but a regular file. A
// missing or unreadable path fails as os.Open does (*fs.PathError).
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// regular returns f, opened from path, when it is a regular file; it
// closes f and refuses it otherwise. The check is on the open file, so a
// path swapped after a check by name cannot slip through.
func regular(f *os.File, path string) (*os.File, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, fi.Mode())
	}
	return f, nil
}

// NotRegularError is Open's refusal of a path that is not a regular file;
// it matches ErrNotRegular.
type NotRegularError struct {
	Path string
	What string // what it is instead, as a user would say it: "a named pipe (FIFO)"
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, %v; give the path of a file", e.Path, e.What, ErrNotRegular)
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// ReadFile is os.ReadFile for a regular file only (see Open).
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// describe names a file type the way a user would.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}
