//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestWatchdogRealShellTool: the real opencode runs a real idle shell tool
// (`sleep`, asked for by the fake LLM, approved by --auto-approve); the
// turn watchdog finds the tool's own subtree idle past --tool-timeout and
// cancels the turn (130) with the sleeping process in its evidence, and
// nothing avenor started outlives it (docs/unattended.md).
func TestWatchdogRealShellTool(t *testing.T) {
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-opencode")); err != nil {
		t.Fatalf("the opencode plugin is not built: %v", err)
	}
	const threshold = 5 * time.Second
	sleep := fmt.Sprintf("sleep 600.%d", os.Getpid()%1000)
	w := newWorld(t, opencode, fakellm.Config{Script: fakellm.ShellThenText(sleep, "DONE")})
	run := w.startAvenor("watchdog", "--prompt", "Run "+sleep+" using the shell.", "--auto-approve",
		"--tool-timeout", threshold.String(), "--watchdog", "cancel")
	res, evs, s := run.finish()
	if res.code != 130 || s.status != "KILLED" {
		t.Fatalf("want exit 130 and a KILLED sentinel (the watchdog cancelled the turn); got %v, sentinel %q\nevents: %v", res, s.raw, names(evs))
	}
	dogs := only(evs, "avenor.watchdog")
	if len(dogs) != 1 || dogs[0].str("kind") != "tool" || dogs[0].str("action") != "cancel" {
		t.Fatalf("want one tool firing that cancels, got %v\nevents: %v", dogs, names(evs))
	}
	dog := dogs[0]
	var call event
	for _, e := range evs {
		if e.name() == "tool.call" && e.str("toolCallId") == dog.str("tool") {
			call = e
			break
		}
	}
	if call == nil {
		t.Fatalf("the firing names tool %q, which no tool.call has", dog.str("tool"))
	}
	ms := func(e event) float64 { f, _ := e["ts"].(float64); return f }
	detect := time.Duration(ms(dog)-ms(call)) * time.Millisecond
	t.Logf("detection time %v after the tool.call (threshold %v)", detect, threshold)
	if detect < threshold || detect > threshold+5*time.Second {
		t.Errorf("fired %v after the tool call began, want within [%v, %v]", detect, threshold, threshold+5*time.Second)
	}
	ev, _ := dog["evidence"].(map[string]any)
	found := false
	list, _ := ev["subtree"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		if cmd, _ := m["cmdline"].(string); strings.Contains(cmd, sleep) {
			found = true
			if cpu, _ := m["cpu_ms"].(float64); cpu != 0 {
				t.Errorf("the idle sleep gained %v ms of CPU over the window", cpu)
			}
		}
	}
	if !found {
		t.Errorf("the evidence's subtree lacks %q: %v", sleep, ev["subtree"])
	}
	if end := only(evs, "session.end"); len(end) != 1 || end[0].str("stop_reason") != "cancelled" {
		t.Errorf("session.end %v, want one, cancelled", end)
	}
}
