package permission_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
)

// needRoot skips a test that must play another uid, or fails it when
// AVENOR_REQUIRE_ROOT says root is there.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
		t.Fatal("AVENOR_REQUIRE_ROOT is set but the test does not run as root")
	}
	t.Skip("needs root to give a file to uid 65534")
}

// TestFileHandlerUntrustedResponse: a response that someone other than the
// run's user (or root) may have put there is not applied: a symlink,
// another uid's file, a file in a directory others can write that is not
// sticky. Each gets one warning naming why, the request stays pending, and
// a proper answer written afterwards is taken. A file of ours in a shared
// sticky directory is taken at once.
func TestFileHandlerUntrustedResponse(t *testing.T) {
	_, fr := goldenRequest()
	for _, tc := range []struct {
		name   string
		root   bool
		sticky bool // the base's directory is 1777, like /tmp
		plant  func(t *testing.T, dir, resp string)
		warn   string // "" the planted answer is taken
	}{
		{name: "symlink to an answer", plant: func(t *testing.T, dir, resp string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, []byte(`{"option_id":"allow"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, resp); err != nil {
				t.Fatal(err)
			}
		}, warn: "is a symbolic link; ignored, still waiting for request 17"},
		{name: "another uid's file", root: true, sticky: true, plant: func(t *testing.T, dir, resp string) {
			writeResponse(t, resp, `{"option_id":"allow"}`)
			if err := os.Lchown(resp, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, warn: "belongs to uid 65534, not to this run's user"},
		{name: "directory others write, not sticky", plant: func(t *testing.T, dir, resp string) {
			writeResponse(t, resp, `{"option_id":"allow"}`)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, warn: "a directory other users can write and that is not sticky"},
		{name: "our file in a sticky shared directory", sticky: true, plant: func(t *testing.T, dir, resp string) {
			writeResponse(t, resp, `{"option_id":"allow"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				needRoot(t)
			}
			dir := filepath.Join(t.TempDir(), "perm")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.sticky {
				if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
					t.Fatal(err)
				}
			}
			w := &warnings{}
			h := permission.NewFileHandler(filepath.Join(dir, "run.perm"),
				permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: 10 * time.Second, Warn: w.warn})
			res := askAsync(context.Background(), h, fr)
			waitFile(t, h.ReqPath())
			tc.plant(t, dir, h.ResponsePath())
			if tc.warn == "" {
				if r := awaitAsk(t, res); r.err != nil || r.a.OptionID != "allow" {
					t.Fatalf("Ask = %+v, %v; want the answer taken", r.a, r.err)
				}
				if msgs := w.all(); len(msgs) != 0 {
					t.Errorf("warnings %q, want none", msgs)
				}
				return
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(w.all()) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // ten more polls: still pending
			select {
			case r := <-res:
				t.Fatalf("the planted response was applied: %+v, %v", r.a, r.err)
			default:
			}
			if msgs := w.all(); len(msgs) != 1 || !strings.Contains(msgs[0], tc.warn) || !strings.Contains(msgs[0], h.ResponsePath()) {
				t.Errorf("warnings %q, want one saying %q", msgs, tc.warn)
			}
			// The harness's own answer is taken.
			_ = os.Chmod(dir, 0o700)
			if err := os.Remove(h.ResponsePath()); err != nil {
				t.Fatal(err)
			}
			writeResponse(t, h.ResponsePath(), `{"option_id":"deny"}`)
			if r := awaitAsk(t, res); r.err != nil || r.a.OptionID != "deny" {
				t.Fatalf("Ask = %+v, %v; want the harness's answer", r.a, r.err)
			}
		})
	}
}
