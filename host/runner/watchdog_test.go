package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/watchdog"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// watchdogEvents are a log's avenor.watchdog events.
func watchdogEvents(evs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["event"] == string(TypeWatchdog) {
			out = append(out, ev)
		}
	}
	return out
}

// The progress rule under each action: warn goes on, cancel ends the turn
// cancelled (not progress_timeout), restart without a restart cancels
// with its restarts used up, a refused restart cancels too.
func TestWatchdogProgressActions(t *testing.T) {
	refused := errors.New("no session to resume")
	for _, tc := range []struct {
		name      string
		script    string
		dog       Watchdog
		stop      sdk.StopReason
		firings   int
		action    string
		exhausted bool
	}{
		{name: "warn", script: "say hi\nsleep 500ms\nsay done", dog: Watchdog{Action: WatchdogWarn},
			stop: sdk.StopEndTurn, firings: 1, action: "warn"},
		{name: "cancel", script: "say hi\nsleep 10s", dog: Watchdog{Action: WatchdogCancel},
			stop: sdk.StopCancelled, firings: 1, action: "cancel"},
		{name: "restart with none left", script: "say hi\nsleep 10s", dog: Watchdog{Action: WatchdogRestart, Restarts: 0,
			Restart: func(string) error { t.Error("restarted past the limit"); return nil }},
			stop: sdk.StopCancelled, firings: 1, action: "cancel", exhausted: true},
		{name: "restart refused", script: "say hi\nsleep 10s", dog: Watchdog{Action: WatchdogRestart, Restarts: 2,
			Restart: func(string) error { return refused }},
			stop: sdk.StopCancelled, firings: 1, action: "restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.script)
			f.opts.ProgressTimeout, f.opts.Watchdog = 300*time.Millisecond, tc.dog
			r := New(f.opts, nil)
			res := r.Run(context.Background())
			if res.StopReason != tc.stop {
				t.Fatalf("stop reason %q, want %q", res.StopReason, tc.stop)
			}
			dogs := watchdogEvents(f.events(t))
			if len(dogs) != tc.firings {
				t.Fatalf("%d firings, want %d: %v", len(dogs), tc.firings, dogs)
			}
			d := dogs[0]
			if d["kind"] != "progress" || d["action"] != tc.action || (d["restarts_exhausted"] == true) != tc.exhausted {
				t.Errorf("firing %v, want progress %s (exhausted %v)", d, tc.action, tc.exhausted)
			}
			if idle, _ := d["idle_for_ms"].(float64); idle < 300 {
				t.Errorf("idle_for_ms %v below the 300 ms threshold", idle)
			}
			ev, _ := d["evidence"].(map[string]any)
			if last, _ := ev["last_events"].([]any); len(last) == 0 || len(last) > MaxWatchdogEvents {
				t.Errorf("evidence last_events %v", ev["last_events"])
			}
			if fired := r.WatchdogFired(); fired == nil || fired.Kind != "progress" || fired.Count != 1 {
				t.Errorf("WatchdogFired %+v", fired)
			}
			if st := r.Status(); st.Watchdog == nil || st.Watchdog["kind"] != "progress" {
				t.Errorf("status watchdog %v", st.Watchdog)
			}
		})
	}
}

// Without a watchdog the progress timeout ends the turn as it always did,
// with no avenor.watchdog.
func TestNoWatchdogProgressTimeoutUnchanged(t *testing.T) {
	f := newFixture(t, "say hi\nsleep 10s")
	f.opts.ProgressTimeout = 200 * time.Millisecond
	r := New(f.opts, nil)
	res := r.Run(context.Background())
	if res.StopReason != sdk.StopProgressTimeout || res.ExitCode != 124 {
		t.Fatalf("%+v", res)
	}
	if dogs := watchdogEvents(f.events(t)); len(dogs) != 0 || r.WatchdogFired() != nil {
		t.Fatalf("a watchdog fired without --watchdog: %v", dogs)
	}
}

// A tool call with no process of its own falls back to the progress rule
// at the tool timeout, naming the call.
func TestWatchdogToolWithoutProcessesFallsBack(t *testing.T) {
	f := newFixture(t, "say hi\ntoolproc none")
	f.opts.Watchdog = Watchdog{Action: WatchdogCancel, ToolTimeout: 400 * time.Millisecond, ProcRoot: t.TempDir()}
	res := New(f.opts, nil).Run(context.Background())
	if res.StopReason != sdk.StopCancelled {
		t.Fatalf("%+v", res)
	}
	dogs := watchdogEvents(f.events(t))
	if len(dogs) != 1 || dogs[0]["kind"] != "progress" || dogs[0]["tool"] != "call_1" {
		t.Fatalf("firings %v, want one progress firing naming call_1", dogs)
	}
	ev, _ := dogs[0]["evidence"].(map[string]any)
	if tool, _ := ev["tool"].(map[string]any); tool["verdict"] != watchdog.NoSubtree.String() {
		t.Errorf("evidence tool %v, want verdict no_subtree", ev["tool"])
	}
}

func TestWatchdogBoundsOfTheEvidence(t *testing.T) {
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	if got := tailText(string(long)+"\nlast line", MaxWatchdogStderr); len(got) > MaxWatchdogStderr || got != "last line" {
		t.Errorf("tailText kept %d bytes: %.40q", len(got), got)
	}
	if got := clipText("héllo", 2); got != "h" {
		t.Errorf("clipText cut a rune: %q", got)
	}
}
