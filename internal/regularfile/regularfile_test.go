package regularfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(file, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		want       string // "" = reads "hello"; else a substring of the error
		notRegular bool
		notExist   bool
	}{
		{name: "regular file", path: file},
		{name: "symlink to a file", path: link},
		{name: "named pipe without a writer", path: fifo, want: "is a named pipe (FIFO), not a regular file; give the path of a file", notRegular: true},
		{name: "directory", path: dir, want: "is a directory, not a regular file", notRegular: true},
		{name: "socket", path: sock, want: "no such device or address"},
		{name: "character device", path: "/dev/null", want: "is a character device, not a regular file", notRegular: true},
		{name: "missing", path: filepath.Join(dir, "missing"), want: "no such file or directory", notExist: true},
		{name: "dangling symlink", path: dangling, want: "no such file or directory", notExist: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() { defer close(done); data, err = ReadFile(tc.path) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%s) blocked", tc.path)
			}
			if tc.want == "" {
				if err != nil || string(data) != "hello" {
					t.Fatalf("ReadFile = %q, %v", data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("ReadFile error = %v, want one naming %s and saying %q", err, tc.path, tc.want)
			}
			if errors.Is(err, ErrNotRegular) != tc.notRegular || errors.Is(err, fs.ErrNotExist) != tc.notExist {
				t.Errorf("errors.Is(ErrNotRegular) = %v, errors.Is(fs.ErrNotExist) = %v", errors.Is(err, ErrNotRegular), errors.Is(err, fs.ErrNotExist))
			}
		})
	}
}
