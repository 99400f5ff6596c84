package liveview

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestViewSaysWhatAStalledTurnWaitsFor: a turn the runtime never answers
// says, after StallAfter, whose first reply it waits for; a timeout with no
// reply ends with the likely cause and the fix. A turn that had replies
// gets no such hint.
func TestViewSaysWhatAStalledTurnWaitsFor(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: TTY, Now: clock.Now, Tick: 5 * time.Millisecond})
	for _, ev := range []event.Event{
		{"event": "session.start", "backend": "opencode-acp"},
		{"event": "avenor.turn.start", "turn": 1},
	} {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if strings.Contains(out.String(), "waiting for") {
		t.Fatalf("waiting before StallAfter:\n%q", out.String())
	}
	clock.add(StallAfter + time.Second)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "waiting for opencode-acp's first reply"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the status line never said what it waits for:\n%q", out.String())
		}
	}
	v.Finish(Summary{StopReason: "timeout", ExitCode: 124})
	if got := out.String(); !strings.Contains(got, "opencode-acp never replied: its model endpoint is likely unreachable") ||
		!strings.Contains(got, "avenor backends") {
		t.Errorf("no cause and fix after a silent timeout:\n%s", got)
	}

	// A turn with replies that times out: no endpoint hint.
	w2 := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w2.Close()
	var out2 syncBuffer
	v2 := Start(w2, Options{Out: &out2, Mode: TTY})
	for _, ev := range []event.Event{{"event": "session.start", "backend": "pi"}, chunk("working on it\n")} {
		if _, err := w2.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	v2.Finish(Summary{StopReason: "timeout", ExitCode: 124})
	if strings.Contains(out2.String(), "never replied") {
		t.Errorf("a hint after a turn that replied:\n%s", out2.String())
	}
}

// TestSummaryCountsEveryTurnsTokens: a loop (or a retried run) ends several
// sessions; the summary adds up their usage instead of showing the last.
func TestSummaryCountsEveryTurnsTokens(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: Plain})
	for _, ev := range []event.Event{
		{"event": "avenor.phase.start", "phase": "code", "iteration": 1},
		{"event": "session.end", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 10, "output_tokens": 20}},
		{"event": "avenor.phase.start", "phase": "code", "iteration": 2},
		{"event": "session.end", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": int64(5), "output_tokens": 6.0}},
	} {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	v.Finish(Summary{StopReason: "end_turn"})
	if got := out.String(); !strings.Contains(got, "15 in / 26 out tokens across 2 turns") {
		t.Errorf("the summary does not add up the iterations:\n%s", got)
	}
}

// TestViewQuietWhileAPermissionWaits: a turn waiting on a permission answer
// is not called stalled: the request above says who answers it.
func TestViewQuietWhileAPermissionWaits(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: TTY, Now: clock.Now, Tick: 5 * time.Millisecond})
	for _, ev := range []event.Event{
		{"event": "session.start", "backend": "pi"},
		{"event": "avenor.turn.start", "turn": 1},
		{"event": "permission.request", "request_id": "1", "question": "Run make?", "resolver": "none"},
	} {
		if _, err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Millisecond)
	clock.add(5 * StallAfter)
	time.Sleep(50 * time.Millisecond)
	v.Finish(Summary{StopReason: "timeout", ExitCode: 124})
	if got := out.String(); strings.Contains(got, "waiting for pi") || strings.Contains(got, "never replied") {
		t.Errorf("a turn waiting on a permission was called stalled:\n%s", got)
	}
}
