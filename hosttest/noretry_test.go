package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNoRetryOnMissingRuntimeBinary: the scripted backend, configured to fail
// opening its session as a backend with no CLI does and to report itself not
// ready, is not retried with --max-retries, and stderr gives the fix.
func TestNoRetryOnMissingRuntimeBinary(t *testing.T) {
	w := newWorld(t)
	w.userConfig("[backends.scripted.options]\nfail_open = \"the runtime CLI \\\"scr\\\" was not found in PATH\"\nnot_ready = \"install it with: npm install -g scr\"\n")
	log := w.path("ev.ndjson")
	res := w.run("--backend", "scripted", "--prompt", "say hi", "--max-retries", "3", "--on-event", log)
	if res.code != 1 || res.elapsed > 2*time.Second {
		t.Fatalf("%v; want exit 1 at once, no backoff", res)
	}
	if !strings.Contains(res.stderr, "install it with: npm install -g scr") || !strings.Contains(res.stderr, "not retrying") {
		t.Errorf("stderr lacks the fix:\n%s", res.stderr)
	}
	if n := len(only(readEvents(t, log), "avenor.retry")); n != 0 {
		t.Errorf("%d retries", n)
	}
}

// TestNoRetryOnMissingRuntimeBinaryOpencode: the real opencode plugin with no
// opencode CLI on PATH (when AVENOR_TEST_BIN has the plugin).
func TestNoRetryOnMissingRuntimeBinaryOpencode(t *testing.T) {
	src := os.Getenv("AVENOR_TEST_BIN")
	plugin := filepath.Join(src, "avenor-plugin-opencode")
	if _, err := os.Stat(plugin); src == "" || err != nil {
		t.Skip("AVENOR_TEST_BIN has no avenor-plugin-opencode (make build builds it)")
	}
	w := newWorld(t)
	dir := w.path("plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(plugin, filepath.Join(dir, "avenor-plugin-opencode")); err != nil {
		t.Fatal(err)
	}
	res := w.runEnv([]string{"AVENOR_PLUGIN_PATH=" + dir}, "--backend", "opencode-acp", "--prompt", "hi", "--max-retries", "2")
	if res.code != 1 || res.elapsed > 10*time.Second || !strings.Contains(res.stderr, "not retrying") {
		t.Errorf("%v; want exit 1 without a retry, saying why", res)
	}
	if n := strings.Count(res.stderr, "was not found"); n != 1 {
		t.Errorf("the failure is said %d times (one per attempt), want once:\n%s", n, res.stderr)
	}
}
