package client

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestAwaitSockets: --socket wins (and may not be empty), then
// AVENOR_SOCKET, then every ~/.avenor/sockets/*.sock, the default socket
// first and the others sorted.
func TestAwaitSockets(t *testing.T) {
	home := t.TempDir()
	dir := SocketDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if _, err := AwaitSockets("", false, env(map[string]string{"HOME": home})); err == nil || !strings.Contains(err.Error(), "no supervisor socket in "+dir) {
		t.Errorf("empty directory: %v", err)
	}
	for _, n := range []string{"b.sock", "default.sock", "a.sock", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		socket string
		given  bool
		vars   map[string]string
		want   []string
		err    string
	}{
		{name: "given", socket: "/s.sock", given: true, vars: map[string]string{SocketEnv: "/e.sock"}, want: []string{"/s.sock"}},
		{name: "given empty", given: true, err: "--socket is required"},
		{name: "env", vars: map[string]string{SocketEnv: "/e.sock", "HOME": home}, want: []string{"/e.sock"}},
		{name: "no home", vars: map[string]string{}, err: "$HOME is not set"},
		{name: "search", vars: map[string]string{"HOME": home}, want: []string{DefaultSocketPath(home), filepath.Join(dir, "a.sock"), filepath.Join(dir, "b.sock")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AwaitSockets(tc.socket, tc.given, env(tc.vars))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("AwaitSockets = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("AwaitSockets = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
