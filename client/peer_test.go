package client

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenRecording listens on a socket in a fresh directory and records
// what the first accepted connection sends until it closes; the channel
// gets those bytes (nil: nobody connected within a second).
func listenRecording(t *testing.T) (string, <-chan []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		defer ln.Close()
		_ = ln.(*net.UnixListener).SetDeadline(time.Now().Add(time.Second))
		nc, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer nc.Close()
		_ = nc.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(nc)
		got <- append([]byte{}, b...)
	}()
	return path, got
}

// TestTrustPeer: a server of another uid (root included, unless the client
// asked to trust root) is refused with an error naming the uid and pid;
// the client's own uid, and root when asked, are accepted.
func TestTrustPeer(t *testing.T) {
	const me = 1000
	for _, tc := range []struct {
		name     string
		peerUID  int
		trust    trust
		refused  bool
		mentions []string
	}{
		{"same uid", me, trust{uid: me}, false, nil},
		{"another uid", 65534, trust{uid: me}, true, []string{"pid 4242 of uid 65534", "not by this user (uid 1000)", "nothing was sent"}},
		{"another uid, root trusted", 65534, trust{uid: me, trustRoot: true}, true, []string{"uid 65534"}},
		{"root not asked for", 0, trust{uid: me}, true, []string{"of uid 0", EnvTrustRoot + "=1"}},
		{"root asked for", 0, trust{uid: me, trustRoot: true}, false, nil},
		{"root client, root server", 0, trust{uid: 0}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uc := &net.UnixConn{} // never read: the peer function gives the uid
			err := tc.trust.checkPeer(uc, "/tmp/s.sock", func(*net.UnixConn) (int, int, error) { return tc.peerUID, 4242, nil })
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUntrustedSocket) {
				t.Fatalf("checkPeer: %v, want ErrUntrustedSocket", err)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// TestDialSendsNothingToUntrustedPeer: Dial refuses a server of another
// uid before the Client exists, so not a byte reaches it.
func TestDialSendsNothingToUntrustedPeer(t *testing.T) {
	path, got := listenRecording(t)
	c, err := dialTrusting(context.Background(), path, trust{uid: os.Geteuid()},
		func(*net.UnixConn) (int, int, error) { return os.Geteuid() + 1, 4242, nil })
	if c != nil {
		c.Close()
	}
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), path) {
		t.Fatalf("dial: %v, want ErrUntrustedSocket naming %s", err, path)
	}
	if b := <-got; b == nil || len(b) != 0 {
		t.Errorf("the untrusted server received %q (nil: never connected)", b)
	}
}

// TestDialChecksSocketOwner: a socket file of another user is refused
// before the dial, naming its owner; the server never sees a connection.
// Giving the file away needs root.
func TestDialChecksSocketOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
			t.Fatal("AVENOR_REQUIRE_ROOT is set but the test does not run as root")
		}
		t.Skip("needs root to give the socket file to uid 65534")
	}
	path, got := listenRecording(t)
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(context.Background(), path)
	if !errors.Is(err, ErrUntrustedSocket) || !strings.Contains(err.Error(), "is owned by uid 65534") {
		t.Fatalf("dial: %v, want ErrUntrustedSocket naming uid 65534", err)
	}
	if b := <-got; b != nil {
		t.Errorf("the squatter saw a connection (%q)", b)
	}
}
