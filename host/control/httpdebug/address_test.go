package httpdebug

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeResolver answers from a table; other names fail as DNS would.
type fakeResolver map[string][]string

func (r fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, len(ips))
	for i, s := range ips {
		out[i] = net.IPAddr{IP: net.ParseIP(s)}
	}
	return out, nil
}

var resolver = fakeResolver{
	"loop.test":  {"127.0.0.1", "::1"},
	"six.test":   {"::1"},
	"evil.test":  {"10.0.0.7"},
	"mixed.test": {"127.0.0.1", "192.168.1.9"},
	"empty.test": {},
}

func TestLoopbackAddr(t *testing.T) {
	for _, tc := range []struct {
		name, addr, want string
		err              error
	}{
		{"port only binds 127.0.0.1", ":7777", "127.0.0.1:7777", nil},
		{"port zero", ":0", "127.0.0.1:0", nil},
		{"localhost binds 127.0.0.1", "localhost:7777", "127.0.0.1:7777", nil},
		{"localhost in capitals", "LocalHost:1", "127.0.0.1:1", nil},
		{"numeric ipv4 loopback", "127.0.0.1:1", "127.0.0.1:1", nil},
		{"anywhere in 127/8", "127.0.0.5:1", "127.0.0.5:1", nil},
		{"numeric ipv6 loopback", "[::1]:1", "[::1]:1", nil},
		{"ipv4-mapped loopback", "[::ffff:127.0.0.1]:1", "127.0.0.1:1", nil},
		{"name resolving to loopback only", "loop.test:1", "127.0.0.1:1", nil},
		{"name resolving to ::1", "six.test:1", "[::1]:1", nil},
		{"all interfaces", "0.0.0.0:7777", "", ErrNotLoopback},
		{"all ipv6 interfaces", "[::]:7777", "", ErrNotLoopback},
		{"private address", "10.0.0.1:7777", "", ErrNotLoopback},
		{"ipv4-mapped non-loopback", "[::ffff:10.0.0.1]:1", "", ErrNotLoopback},
		{"name resolving elsewhere", "evil.test:1", "", ErrNotLoopback},
		{"name resolving partly elsewhere", "mixed.test:1", "", ErrNotLoopback},
		{"name resolving to nothing", "empty.test:1", "", ErrNotLoopback},
		{"name not resolving", "nowhere.test:1", "", ErrNotLoopback},
		{"no port", "127.0.0.1", "", ErrBadAddress},
		{"empty", "", "", ErrBadAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoopbackAddr(context.Background(), tc.addr, resolver)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("LoopbackAddr(%q) = %q, %v; want %q, %v", tc.addr, got, err, tc.want, tc.err)
			}
		})
	}
}

// The startup error is the contract's exact text (docs/control-protocol.md#http-debug).
func TestNonLoopbackStartupErrorText(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", "10.0.0.1:1", "evil.test:80", "mixed.test:80"} {
		_, err := LoopbackAddr(context.Background(), addr, resolver)
		want := `address "` + addr + `" must bind to a loopback interface (localhost, 127.0.0.1, or ::1)`
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %s", addr, err, want)
		}
	}
	_, err := LoopbackAddr(context.Background(), "nowhere.test:1", resolver)
	if err == nil || !strings.Contains(err.Error(), "resolving nowhere.test") {
		t.Errorf("an unresolvable name should say so: %v", err)
	}
}

// Start refuses before binding anything or writing the token file.
func TestStartRefusesNonLoopback(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "evil.test:0"} {
		s, err := Start(context.Background(), Config{Addr: addr, Run: newOneShot(newFakeRuntime(""), nil),
			Resolver: resolver, TokenFile: tokenFile})
		if !errors.Is(err, ErrNotLoopback) {
			if s != nil {
				s.Close()
			}
			t.Fatalf("Start(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Fatalf("token file written for a refused address: %v", err)
	}
}

func TestStartBindsLoopback(t *testing.T) {
	for _, addr := range []string{":0", "localhost:0", "loop.test:0"} {
		t.Run(addr, func(t *testing.T) {
			s := start(t, Config{Addr: addr, Run: newOneShot(newFakeRuntime(""), nil), Resolver: resolver})
			if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || strings.HasSuffix(s.URL(), ":0") {
				t.Fatalf("URL = %q, want http://127.0.0.1:<port>", s.URL())
			}
		})
	}
}

func TestLoopbackPeer(t *testing.T) {
	for peer, want := range map[string]bool{
		"127.0.0.1:5000": true, "[::1]:5000": true, "127.0.0.9:1": true, "[::ffff:127.0.0.1]:1": true,
		"10.0.0.1:5000": false, "[::ffff:10.0.0.1]:1": false, "[fe80::1%eth0]:1": false, "": false, "garbage": false,
	} {
		if got := loopbackPeer(peer); got != want {
			t.Errorf("loopbackPeer(%q) = %v, want %v", peer, got, want)
		}
	}
}
