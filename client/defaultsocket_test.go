package client

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveSocket(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
		err  error
	}{
		{"env wins", map[string]string{SocketEnv: "/run/x.sock", "HOME": "/h"}, "/run/x.sock", nil},
		{"default under home", map[string]string{"HOME": "/h"}, "/h/.avenor/sockets/default.sock", nil},
		{"empty env is unset", map[string]string{SocketEnv: "", "HOME": "/h"}, "/h/.avenor/sockets/default.sock", nil},
		{"nothing", map[string]string{}, "", ErrNoDefaultSocket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveSocket(func(k string) string { return tc.env[k] })
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("ResolveSocket = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestPrepareSocketDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", ".avenor", "sockets")
	if err := PrepareSocketDir(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created %v %v; want a 0700 directory", fi, err)
	}
	if err := PrepareSocketDir(fresh); err != nil {
		t.Fatalf("again: %v", err)
	}
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	if err := PrepareSocketDir(shared); !errors.Is(err, ErrSocketDirShared) {
		t.Fatalf("a world-writable dir: %v; want ErrSocketDirShared", err)
	}
	os.Chmod(shared, 0o770)
	if err := PrepareSocketDir(shared); !errors.Is(err, ErrSocketDirShared) {
		t.Fatalf("a group-writable dir: %v; want ErrSocketDirShared", err)
	}
	link := filepath.Join(base, "link")
	os.Symlink(fresh, link)
	if err := PrepareSocketDir(link); err == nil {
		t.Fatal("a symlink was accepted")
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		if err := PrepareSocketDir(other); !errors.Is(err, ErrSocketDirNotOwned) {
			t.Fatalf("another user's dir: %v; want ErrSocketDirNotOwned", err)
		}
	}
}

// Dial with no path dials AVENOR_SOCKET.
func TestDialEmptyUsesAvenorSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{})
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
		close(accepted)
	}()
	t.Setenv(SocketEnv, sock)
	c, err := Dial(context.Background(), "")
	if err != nil {
		t.Fatalf("Dial(\"\") with %s=%s: %v", SocketEnv, sock, err)
	}
	<-accepted
	c.Close()
	t.Setenv(SocketEnv, filepath.Join(t.TempDir(), "none.sock"))
	if _, err := Dial(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "default control socket") {
		t.Fatalf("Dial(\"\") to a missing socket: %v", err)
	}
}
