package regularfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Create makes or truncates a regular file and refuses, at once and
// without opening it, a named pipe (with or without a reader: either
// would block a writer), a device, a directory or a socket.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.ndjson")
	if err := os.WriteFile(existing, []byte("stale lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(existing, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "ev.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	readFifo := filepath.Join(dir, "read.fifo")
	if err := syscall.Mkfifo(readFifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A reader that never reads: os.Create would open, and the writes
	// would block once the pipe buffer filled.
	r, err := os.OpenFile(readFifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cases := []struct {
		name, path string
		want       string // "" = created empty; else a substring of the error
	}{
		{name: "new file", path: filepath.Join(dir, "new.ndjson")},
		{name: "existing file is truncated", path: existing},
		{name: "symlink to a file", path: link},
		{name: "named pipe without a reader", path: fifo, want: "is a named pipe (FIFO), not a regular file; give the path of a file"},
		{name: "named pipe with a reader", path: readFifo, want: "is a named pipe (FIFO), not a regular file"},
		{name: "/dev/full", path: "/dev/full", want: "is a character device, not a regular file; give the path of a file"},
		{name: "/dev/null", path: "/dev/null", want: "is a character device, not a regular file"},
		{name: "directory", path: dir, want: "is a directory, not a regular file"},
		{name: "socket", path: sock, want: "is a socket, not a regular file"},
		{name: "missing directory", path: filepath.Join(dir, "nowhere", "ev.ndjson"), want: "no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var f *os.File
			var err error
			go func() { defer close(done); f, err = Create(tc.path) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Create(%s) blocked", tc.path)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Create = %v", err)
				}
				defer f.Close()
				if fi, err := f.Stat(); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
					t.Fatalf("created file: %v, %v; want an empty regular file", fi, err)
				}
				if _, err := f.WriteString("line\n"); err != nil {
					t.Fatalf("writing the created file: %v", err)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("Create(%s) = nil error, want one saying %q", tc.path, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Create error = %v, want one naming %s and saying %q", err, tc.path, tc.want)
			}
			if strings.Contains(tc.want, "not a regular file") != errors.Is(err, ErrNotRegular) {
				t.Errorf("errors.Is(ErrNotRegular) = %v", errors.Is(err, ErrNotRegular))
			}
		})
	}
	if b, err := os.ReadFile("/dev/null"); err != nil || len(b) != 0 {
		t.Fatalf("/dev/null touched: %q %v", b, err)
	}
}
