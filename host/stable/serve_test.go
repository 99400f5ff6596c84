package stable

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// TestServePrepareLinger: the linger window a supervisor's plugins get is
// --linger when given, else the user's config file (or AVENOR_LINGER); a
// fleet node keeps no durable state and lingers only when --linger says
// so. A supervisor with a state directory has one per socket.
func TestServePrepareLinger(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "avenor"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "avenor", "config.toml"), []byte("linger = \"5s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	for _, tc := range []struct {
		name      string
		given     bool
		linger    time.Duration
		node      bool
		environ   []string
		want      time.Duration
		wantState bool
	}{
		{name: "from the config file", want: 5 * time.Second, wantState: true},
		{name: "from AVENOR_LINGER", environ: []string{"AVENOR_LINGER=7s"}, want: 7 * time.Second, wantState: true},
		{name: "given", given: true, linger: 3 * time.Second, want: 3 * time.Second, wantState: true},
		{name: "given 0", given: true, want: 0, wantState: true},
		{name: "fleet node", node: true, linger: time.Minute, want: 0},
		{name: "fleet node given", node: true, given: true, linger: 2 * time.Second, want: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ServeConfig{Config: Config{SocketPath: filepath.Join(home, "s.sock"), Linger: tc.linger},
				LingerGiven: tc.given, Env: hostrun.Env{Getenv: getenv, Environ: tc.environ}}
			c.prepare(tc.node, make(chan struct{}))
			if c.Linger != tc.want {
				t.Errorf("Linger = %v, want %v", c.Linger, tc.want)
			}
			if (c.StateDir != "") != tc.wantState {
				t.Errorf("StateDir = %q, want one: %v", c.StateDir, tc.wantState)
			}
			if c.Resolve == nil || c.Home != home || c.TempDir != "/tmp" {
				t.Errorf("Resolve set %v, Home %q, TempDir %q", c.Resolve != nil, c.Home, c.TempDir)
			}
		})
	}
}

// TestServeRefusesABadPermissionFileTimeout: a malformed
// AVENOR_PERMISSION_FILE_TIMEOUT stops the supervisor before it starts,
// naming the variable.
func TestServeRefusesABadPermissionFileTimeout(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		switch k {
		case hostrun.PermissionFileTimeoutEnv:
			return "soon"
		case "HOME":
			return dir
		}
		return ""
	}
	_, err := Serve(context.Background(), ServeConfig{Config: Config{SocketPath: filepath.Join(dir, "s.sock")}, Env: hostrun.Env{Getenv: getenv}})
	if err == nil || !strings.Contains(err.Error(), hostrun.PermissionFileTimeoutEnv+`="soon" is not a positive Go duration`) {
		t.Fatalf("Serve = %v, want the variable refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.sock")); !os.IsNotExist(err) {
		t.Errorf("the socket exists after a refusal: %v", err)
	}
}
