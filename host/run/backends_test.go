package run

import (
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestWriteBackendsTable(t *testing.T) {
	var b strings.Builder
	WriteBackendsTable(&b, nil)
	if !strings.HasPrefix(b.String(), "no backend plugins found") {
		t.Errorf("no rows: %q", b.String())
	}
	b.Reset()
	caps := map[sdk.Capability]sdk.Support{sdk.CapResume: sdk.Supported, sdk.CapCancel: sdk.Experimental}
	WriteBackendsTable(&b, []BackendRow{
		{Backend: "echo", Plugin: "echo", PluginVersion: "1.0.0", Capabilities: caps, ResumeScope: sdk.ResumeInProcess,
			ThinkingLevels: []string{"low", "high"}, Ready: true, RuntimeVersion: "2.0"},
		{Backend: "pi", Plugin: "pi", PluginVersion: "0.1", Capabilities: map[sdk.Capability]sdk.Support{}, Message: "pi not found"},
		{Plugin: "broken", Error: "exec format error"},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "BACKEND") {
		t.Fatalf("table:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"echo", "echo 1.0.0", "yes(in-process)", "exp", "low,high", "yes (2.0)"},
		{"pi", "pi 0.1", "no: pi not found"},
		{"?", "broken", "error: exec format error"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i+1], w)
			}
		}
	}
}
