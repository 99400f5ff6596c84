//go:build linux || darwin

package peercred

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestOfIsThisProcess: both ends of a connection made here are this
// process, so each side reads this uid and pid.
func TestOfIsThisProcess(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan *net.UnixConn, 1)
	go func() {
		c, err := ln.AcceptUnix()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer server.Close()
	for name, c := range map[string]*net.UnixConn{"client's peer": client, "server's peer": server} {
		uid, pid, err := Of(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if uid != os.Getuid() || pid != os.Getpid() {
			t.Errorf("%s: uid %d pid %d, want %d %d", name, uid, pid, os.Getuid(), os.Getpid())
		}
	}
}
