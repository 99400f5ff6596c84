package pi

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The tool list becomes --tools (or --no-tools), the appended prompt a
// file given to --append-system-prompt (its text never in argv), and a
// mode without the gate that enforces it is refused.
func TestPlanLaunchContext(t *testing.T) {
	l, err := plan(runtime.OpenRequest{Dir: "/w", StateDir: t.TempDir(), PermissionMode: runtime.ModePlan,
		Launch: runtime.LaunchContext{AllowedTools: []string{"read", "bash"}, AppendSystemPrompt: "STANDING"}})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(l.args, " ")
	if !strings.Contains(joined, "--tools read,bash") || strings.Contains(joined, "STANDING") {
		t.Errorf("args %q", l.args)
	}
	i := slices.Index(l.args, "--append-system-prompt")
	if i < 0 {
		t.Fatalf("no --append-system-prompt in %q", l.args)
	}
	if b, err := os.ReadFile(l.args[i+1]); err != nil || string(b) != "STANDING" {
		t.Errorf("the prompt file: %q %v", b, err)
	}
	l.cleanup()
	if _, err := os.Stat(l.args[i+1]); !os.IsNotExist(err) {
		t.Errorf("the prompt file is left behind: %v", err)
	}

	l, err = plan(runtime.OpenRequest{Dir: "/w", StateDir: t.TempDir(), Launch: runtime.LaunchContext{AllowedTools: []string{}}})
	if err != nil || !slices.Contains(l.args, "--no-tools") {
		t.Errorf("no tools: %q %v", l.args, err)
	}
	_, err = plan(runtime.OpenRequest{Dir: "/w", PermissionMode: runtime.ModePlan, Options: map[string]any{OptionPermissionGate: false}})
	if err == nil || runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), "gate") {
		t.Errorf("a mode without the gate: %v", err)
	}
}
