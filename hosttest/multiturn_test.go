package hosttest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestOneShotTurnsEachEnd: a one-shot run that takes more prompts over its
// control socket ends every turn with its own session.end — its stop reason
// and final_output — as the original does (docs/run.md#multi-turn), so a harness waiting for
// each turn's end sees it and turn 1's output is not lost. The sentinel is
// written once, after the last turn, with that turn's values.
func TestOneShotTurnsEachEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// send is what the harness does while turn 1 runs.
		send func(ctx context.Context, c *client.Client) error
		// ends: each session.end as stop_reason:final_output.
		ends []string
	}{
		{"queued prompt", func(ctx context.Context, c *client.Client) error {
			return c.Prompt(ctx, "say two")
		}, []string{"end_turn:one", "end_turn:two"}},
		{"interrupt and prompt", func(ctx context.Context, c *client.Client) error {
			return c.InterruptAndPrompt(ctx, "say interrupted", false)
		}, []string{"cancelled:one", "end_turn:interrupted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			sock, evPath, sent := w.path("c.sock"), w.path("events.ndjson"), w.path("run.done")
			p := w.start(nil, "--backend", "scripted", "--run-id", "mt", "--control-socket", sock,
				"--on-event", evPath, "--sentinel-file", sent, "--prompt", "say one\nsleep 3s")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := dialControl(t, ctx, sock)
			if !waitFor(10*time.Second, func() bool {
				st, err := c.Status(ctx)
				return err == nil && st.TurnState == "running"
			}) {
				t.Fatal("turn 1 never ran")
			}
			if err := tc.send(ctx, c); err != nil {
				t.Fatal(err)
			}
			res := p.wait()
			if res.code != 0 {
				t.Fatalf("run: %v", res)
			}
			evs := readEvents(t, evPath)
			var ends []string
			for _, ev := range only(evs, "session.end") {
				ends = append(ends, ev.str("stop_reason")+":"+ev.str("final_output"))
			}
			if strings.Join(ends, ",") != strings.Join(tc.ends, ",") {
				t.Fatalf("session.end lines: got %v, want %v", ends, tc.ends)
			}
			if got := names(evs, "agent.status"); got[len(got)-1] != "session.end" {
				t.Fatalf("the log must end with the last turn's session.end: %v", got)
			}
			checkSentinel(t, sent, sentinelBytes("DONE", sessionOf(t, evs), "end_turn", 0, "mt"))
		})
	}
}

// TestOneShotRefusesStableForms: a one-shot run answers the stable-only forms
// — status, result and cancel naming a runtime that is not the run's own —
// with -32601 (docs/control-protocol.md#errors, docs/control-protocol.md#methods), while the same calls naming the run itself, or
// nothing, work.
func TestOneShotRefusesStableForms(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock := w.path("c.sock")
	p := w.start(nil, "--backend", "scripted", "--run-id", "own", "--control-socket", sock, "--prompt", "say hi\nsleep 30s")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	for _, method := range []string{"status", "result", "cancel"} {
		var out map[string]any
		err := c.Call(ctx, method, map[string]any{"runtime_id": "rt_9"}, &out)
		var re *client.RPCError
		if !errors.As(err, &re) || re.Code != -32601 || re.Message != "method not found" ||
			!strings.Contains(string(re.Data), `is a stable form`) {
			t.Errorf("%s {runtime_id: rt_9}: got %v, want -32601 method not found", method, err)
		}
	}
	for _, method := range []string{"status", "result"} {
		var out map[string]any
		if err := c.Call(ctx, method, map[string]any{"runtime_id": "own"}, &out); err != nil {
			t.Errorf("%s naming the run itself: %v", method, err)
		}
	}
	if err := c.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if res := p.wait(); res.code != 130 {
		t.Fatalf("run after cancel: %v", res)
	}
}
