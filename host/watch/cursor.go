package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ReadCursor reads a cursor file: a decimal byte offset and a newline
// (docs/watch.md). A missing file is offset 0 with ok false: the first watch
// of a log starts at its beginning.
func ReadCursor(path string) (offset int64, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("cursor %s: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	n, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil || n < 0 {
		return 0, false, fmt.Errorf("cursor %s: %w: %q (remove it to start from the beginning)", path, ErrBadCursor, prefix(s, 40))
	}
	return n, true, nil
}

// WriteCursor replaces the cursor file with offset, atomically: it writes
// <path>.tmp and renames it over path, so a reader sees the old offset or
// the new one, never half of one.
func WriteCursor(path string, offset int64) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(offset, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("cursor %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("cursor %s: %w", path, err)
	}
	return nil
}
