package watch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Stdin is the log name that reads standard input (`avenor watch -`).
const Stdin = "-"

// stdinPath is what Stdin opens: a new descriptor of fd 0, so that it can be
// made non-blocking without touching the descriptor the shell shares.
const stdinPath = "/dev/stdin"

// isStream says whether a file mode is one that cannot be read at offsets:
// a pipe (`… | avenor watch -`), a named pipe, a terminal or a socket.
func isStream(m fs.FileMode) bool {
	return m&(fs.ModeNamedPipe|fs.ModeCharDevice|fs.ModeSocket) != 0
}

// openPath opens a log for reading. A stream is opened non-blocking: the
// open does not wait for a named pipe's writer, and reads never block, so
// the follower keeps its own pace and sees ctx end.
func openPath(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && isStream(fi.Mode()) {
		return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	return os.Open(path)
}

// streamSource reads a pipe for the lineReader, which asks for the bytes
// after those it has (ReadAt at its end, never earlier). A read takes what
// the pipe holds now: none is io.EOF (come back later), and end of file
// (every writer closed it) sets closed.
type streamSource struct {
	f      *os.File
	rc     syscall.RawConn
	off    int64
	closed bool
}

func newStreamSource(f *os.File) (*streamSource, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &streamSource{f: f, rc: rc}, nil
}

func (s *streamSource) ReadAt(p []byte, off int64) (int, error) {
	if off != s.off {
		return 0, fmt.Errorf("reading %s at byte %d after %d: a pipe reads forward only", s.f.Name(), off, s.off)
	}
	if s.closed || len(p) == 0 {
		return 0, io.EOF
	}
	var n int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), p)
			if !errors.Is(rerr, syscall.EINTR) {
				return true // one look only: never wait for the writer
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errors.Is(rerr, syscall.EAGAIN):
		return 0, io.EOF
	case rerr != nil:
		return 0, rerr
	case n == 0:
		s.closed = true
		return 0, io.EOF
	}
	s.off += int64(n)
	return n, nil
}
