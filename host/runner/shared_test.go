package runner

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Two runs on one shared writer make one stream: one seq, each event with
// its own run's session, and no sentinel when none is asked for.
func TestSharedWriterIsOneStream(t *testing.T) {
	f := newFixture(t, "say one")
	w := event.NewWriter(&f.log, event.Stamp{RunID: f.opts.RunID}, event.Options{})
	var seen []sdk.EventType
	var mu sync.Mutex
	sessions := map[string]bool{}
	for _, prompt := range []string{"say one", "say two"} {
		o := f.opts
		o.Prompt, o.Writer, o.SentinelPath, o.Events = prompt, w, "", nil
		o.OnEvent = func(ev event.Event) {
			mu.Lock()
			seen = append(seen, ev.Type())
			mu.Unlock()
		}
		res := New(o, nil).Run(context.Background())
		if res.ExitCode != 0 || res.SessionID == "" {
			t.Fatalf("%q: %+v", prompt, res)
		}
		sessions[res.SessionID] = true
	}
	evs := f.events(t)
	if len(evs) != len(seen) {
		t.Fatalf("OnEvent saw %d events, the log has %d", len(seen), len(evs))
	}
	starts := 0
	for i, ev := range evs {
		if ev["seq"] != float64(i+1) {
			t.Fatalf("event %d has seq %v", i+1, ev["seq"])
		}
		if ev["event"] == "session.start" {
			starts++
		}
		if sid, _ := ev["session_id"].(string); !sessions[sid] {
			t.Fatalf("event %d (%v) has session_id %q, want one of the runs'", i+1, ev["event"], sid)
		}
	}
	if starts != 2 || len(sessions) != 2 {
		t.Fatalf("%d session.start, sessions %v", starts, sessions)
	}
	if _, err := readFileMaybe(f.opts.SentinelPath); err == nil {
		t.Fatal("a run without SentinelPath wrote a sentinel")
	}
}

// FollowUp continues the session after a clean turn until it says stop.
func TestFollowUpAddsTurns(t *testing.T) {
	f := newFixture(t, "announce")
	asked := 0
	f.opts.FollowUp = func() (string, bool) {
		asked++
		if asked > 2 {
			return "", false
		}
		return "announce", true
	}
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	var text strings.Builder
	turns := 0
	for _, ev := range f.events(t) {
		switch ev["event"] {
		case "avenor.turn.start":
			turns++
		case "agent.message_chunk":
			c, _ := ev["content"].(map[string]any)
			s, _ := c["text"].(string)
			text.WriteString(s)
		}
	}
	if turns != 3 || asked != 3 || !strings.Contains(text.String(), "turn 3") {
		t.Fatalf("turns %d, asked %d, text %q", turns, asked, text.String())
	}
}

// A turn that did not end cleanly is not followed up.
func TestFollowUpNotAfterFailure(t *testing.T) {
	f := newFixture(t, "stop refusal")
	f.opts.FollowUp = func() (string, bool) { t.Error("FollowUp asked after a refusal"); return "x", true }
	if res := New(f.opts, nil).Run(context.Background()); res.ExitCode != 2 {
		t.Fatalf("%+v", res)
	}
}

func readFileMaybe(path string) ([]byte, error) { return os.ReadFile(path) }

// slowLog is an event log whose every write takes a while, so a batched
// writer has lines queued when the run ends.
type slowLog struct {
	mu   sync.Mutex
	data []byte
}

func (l *slowLog) Write(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = append(l.data, p...)
	return len(p), nil
}

func (l *slowLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.data)
}

// A run on a shared batched writer (a stable runtime's) says the
// log is complete only once it is: every line, down to the session.end, is
// in the log before the sentinel.
func TestSharedBatchedWriterFlushedBeforeTheSentinel(t *testing.T) {
	f := newFixture(t, "chunks 20")
	log := &slowLog{}
	w := event.NewWriter(log, event.Stamp{RunID: f.opts.RunID}, event.Options{Batched: true})
	defer w.Close()
	o := f.opts
	o.Writer, o.Events = w, nil
	if res := New(o, nil).Run(context.Background()); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if !strings.HasPrefix(sentinelText(t, f), "DONE\n") {
		t.Fatalf("sentinel %q", sentinelText(t, f))
	}
	got := log.String()
	if !strings.Contains(got, `"event":"session.end"`) {
		t.Fatalf("the sentinel was written before the log held the session.end; the log has %d lines", strings.Count(got, "\n"))
	}
}

// TestOnEventValuesArePlainStrings: the events a run hands to OnEvent (the
// live view, the stable supervisor, the loop) hold the vocabulary as plain
// strings, as a decoded log does, so a reader asserting .(string) on
// "event" or "stop_reason" finds it. An sdk.StopReason stored as such
// would read as "" there.
func TestOnEventValuesArePlainStrings(t *testing.T) {
	f := newFixture(t, "say hi")
	var mu sync.Mutex
	var seen []event.Event
	f.opts.OnEvent = func(ev event.Event) {
		mu.Lock()
		seen = append(seen, ev)
		mu.Unlock()
	}
	if res := New(f.opts, nil).Run(context.Background()); res.ExitCode != 0 {
		t.Fatalf("run: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	ended := false
	for _, ev := range seen {
		for _, key := range []string{event.KeyEvent, "stop_reason"} {
			if v, ok := ev[key]; ok {
				if _, isString := v.(string); !isString {
					t.Errorf("%s event: %s is a %T, want a string", ev.Type(), key, v)
				}
			}
		}
		if stop, _ := ev["stop_reason"].(string); ev.Type() == sdk.EventSessionEnd && stop == string(sdk.StopEndTurn) {
			ended = true
		}
	}
	if !ended {
		t.Errorf("no session.end with stop_reason end_turn among %d events", len(seen))
	}
}
