package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// TestStableLeavesItsOwnEnvironmentAlone: avenor stable's linger window
// goes to its plugins in their launch environment; the supervisor's own
// process environment, which everything it runs in process reads, does
// not change.
func TestStableLeavesItsOwnEnvironmentAlone(t *testing.T) {
	defer goleak.VerifyNone(t)
	before, had := os.LookupEnv(plugin.LingerEnv)
	dir := t.TempDir()
	vars := map[string]string{"HOME": dir, "XDG_STATE_HOME": filepath.Join(dir, "state"), "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "TMPDIR": dir}
	var stderr bytes.Buffer
	code := Main([]string{"stable", "--control-socket", filepath.Join(dir, "s.sock"), "--linger", "7s", "--idle-timeout", "100ms"}, Env{
		Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return vars[k] },
	})
	if code != exitOK {
		t.Fatalf("avenor stable exited %d: %s", code, stderr.String())
	}
	if after, has := os.LookupEnv(plugin.LingerEnv); after != before || has != had {
		t.Errorf("avenor stable set its own %s to %q (set %v); it was %q (set %v)", plugin.LingerEnv, after, has, before, had)
	}
}
