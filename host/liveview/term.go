package liveview

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether f is a terminal. Unlike a character-device
// test, it is false for /dev/null, where a harness often sends stderr.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}
