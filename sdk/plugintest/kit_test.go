package plugintest_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest"
	"github.com/avenor-go/avenor/sdk/plugintest/internal/broken"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// quick fails a cancel that does not land sooner than the default 5s: the
// broken backends never cancel, and every check that shows it waits this
// long. 3s, not less: under make test's -race load a Close that does land
// (close_ends_a_turn_in_flight, which every backend here delivers) took
// over 2s to end the turn.
var quick = plugintest.Harness{CancelWithin: 3 * time.Second}

// served returns the named backend served in process over real gRPC.
func served(t *testing.T, name string, backends ...runtime.Backend) runtime.Backend {
	t.Helper()
	c, err := plugin.ServeInProcess(context.Background(), plugin.Info{Name: "kit", Version: "0.0.0"}, nil, backends...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	b, ok := c.Backend(name)
	if !ok {
		t.Fatalf("not served: %s", name)
	}
	return b
}

func TestVerifyPassesOnEcho(t *testing.T) {
	t.Parallel()
	for name, b := range map[string]runtime.Backend{
		"bare":      echo.New(),
		"over gRPC": served(t, echo.Name, echo.New()),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := plugintest.Verify(context.Background(), b, plugintest.Harness{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVerifyNamesWhatABrokenBackendDoesNotDeliver: each broken backend
// fails exactly the behaviours it claims and does not deliver.
func TestVerifyNamesWhatABrokenBackendDoesNotDeliver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		backend string
		fails   []string
	}{
		// A bare backend cannot be restarted: the fresh-process checks are
		// VerifyBinary's (see TestVerifyBinaryReportsEveryBehaviour).
		{broken.ForgetsSessions, []string{
			"broken-resume/resume/resume_continues_a_session_by_id",
		}},
		{broken.IgnoresCancel, []string{
			"broken-cancel/session/cancel_ends_the_turn_promptly",
			"broken-cancel/session/cancel_right_after_prompt_ends_the_turn",
			"broken-cancel/session/session_works_after_a_cancel",
			"broken-cancel/permission/cancel_while_a_permission_is_pending",
		}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			err := plugintest.Verify(context.Background(), served(t, tc.backend, broken.Backends()...), quick)
			if err == nil {
				t.Fatal("Verify passed a broken backend")
			}
			var got []string
			for _, line := range strings.Split(err.Error(), "\n")[1:] {
				name, _, _ := strings.Cut(strings.TrimSpace(line), ":")
				got = append(got, name)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.fails))
			if !slices.Equal(got, want) {
				t.Errorf("failed checks = %v\nwant %v\nerror: %v", got, want, err)
			}
		})
	}
}

// TestCapabilitiesAreProbedNotAssumed: what a backend does not advertise
// is skipped; what it advertises but the harness cannot show fails; what it
// advertises as unverified and does not deliver is a skip that says so.
func TestCapabilitiesAreProbedNotAssumed(t *testing.T) {
	t.Parallel()
	noPermissionPrompt := plugintest.Harness{Prompt: func(b string, k plugintest.TurnKind) (string, bool) {
		if k == plugintest.TurnPermission {
			return "", false
		}
		return plugintest.DefaultPrompt(b, k)
	}}
	for _, tc := range []struct {
		name    string
		backend runtime.Backend
		h       plugintest.Harness
		check   string
		status  plugintest.Status
		detail  string
	}{
		{"not advertised", withCaps(broken.Backends()[1], runtime.CapCancel, runtime.Unsupported), plugintest.Harness{},
			"session/cancel_ends_the_turn_promptly", plugintest.Skip, "cancel is not advertised"},
		{"unverified and broken", withCaps(broken.Backends()[1], runtime.CapCancel, runtime.Unverified), plugintest.Harness{},
			"session/cancel_ends_the_turn_promptly", plugintest.Skip, "advertised as unverified, and it does not hold"},
		{"advertised, no prompt", echo.New(), noPermissionPrompt,
			"permission/allow_lets_the_turn_finish", plugintest.Fail, "the harness gives no permission prompt"},
		{"not advertised, no prompt", withCaps(echo.New(), runtime.CapPermissionRelay, runtime.Unsupported), noPermissionPrompt,
			"permission/allow_lets_the_turn_finish", plugintest.Skip, "permission_relay is not advertised"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.h.CancelWithin = quick.CancelWithin
			rep := verifyReport(t, tc.backend, tc.h)
			for _, r := range rep.Results {
				if strings.HasSuffix(r.Name, "/"+tc.check) {
					if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) {
						t.Errorf("%s = %s (%s), want %s (%q)", r.Name, r.Status, r.Detail, tc.status, tc.detail)
					}
					return
				}
			}
			t.Fatalf("no check %s in %+v", tc.check, rep.Results)
		})
	}
}

// verifyReport runs every tier on a backend served from a built-in-process
// plugin and returns the report.
func verifyReport(t *testing.T, b runtime.Backend, h plugintest.Harness) plugintest.Report {
	t.Helper()
	h.Plugin, h.Backends = plugin.Info{Name: "kit", Version: "0.0.0"}, []runtime.Backend{b}
	rep, err := plugintest.VerifyInProcess(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// capped overrides one capability of a backend.
type capped struct {
	runtime.Backend
	name  runtime.Capability
	level runtime.Support
}

func withCaps(b runtime.Backend, name runtime.Capability, level runtime.Support) runtime.Backend {
	return capped{b, name, level}
}

func (c capped) Info() runtime.BackendInfo {
	info := c.Backend.Info()
	caps := runtime.CapabilityTable{}
	for k, v := range info.Capabilities {
		caps[k] = v
	}
	caps[c.name] = c.level
	info.Capabilities = caps
	if c.name == runtime.CapResume && c.level == runtime.Unsupported {
		info.ResumeScope = ""
	}
	return info
}

// TestVerifyBinaryReportsEveryBehaviour builds the broken plugin and checks
// the report `avenor plugin verify` prints from.
func TestVerifyBinaryReportsEveryBehaviour(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	bin := filepath.Join(t.TempDir(), "avenor-plugin-broken")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/broken/cmd/avenor-plugin-broken").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	rep, err := plugintest.VerifyBinary(context.Background(), bin, quick)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plugin.Name != "broken" || rep.Count(plugintest.Pass) == 0 {
		t.Fatalf("report = %+v", rep)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"PASS  handshake/started_by_hand_it_explains_and_exits\n",
		"FAIL  broken-cancel/session/cancel_ends_the_turn_promptly: cancel is advertised, but after Cancel the turn ran on",
		"FAIL  broken-resume/resume/resume_continues_a_session_by_id: resume is advertised, but resuming session",
		"FAIL  broken-resume/restart/fresh_plugin_resumes_after_a_death",
		"PASS  broken-resume/session/cancel_ends_the_turn_promptly\n",
		"PASS  broken-cancel/restart/plugin_death_ends_the_turn\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, text.String())
		}
	}
	if rep.Err() == nil || !strings.Contains(rep.Err().Error(), "broken-cancel/session/cancel_ends_the_turn_promptly") {
		t.Errorf("Err = %v", rep.Err())
	}
}
