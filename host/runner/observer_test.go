package runner

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// factLog records an Observer's facts in order.
type factLog struct {
	mu    sync.Mutex
	facts []string
	ends  []SessionEnd
}

func (l *factLog) add(s string) {
	l.mu.Lock()
	l.facts = append(l.facts, s)
	l.mu.Unlock()
}

func (l *factLog) Opened(sid string)  { l.add("opened " + sid) }
func (l *factLog) Started(sid string) { l.add("started " + sid) }
func (l *factLog) Ended(e SessionEnd) {
	l.add(fmt.Sprintf("ended %s %s", e.SessionID, e.StopReason))
	l.mu.Lock()
	l.ends = append(l.ends, e)
	l.mu.Unlock()
}

// TestObserverFacts: the runner tells its owner each attempt's session
// opened, started and ended, typed and in order, with the session.end's
// seq and final output as written.
func TestObserverFacts(t *testing.T) {
	f := newFixture(t, "announce\nfail boom")
	f.opts.MaxRetries = 1
	f.opts.Sleep = func(context.Context, time.Duration) error { return nil }
	obs := &factLog{}
	f.opts.Observer = obs
	res := New(f.opts, nil).Run(context.Background())
	if res.ExitCode != 1 || res.StopReason != sdk.StopError {
		t.Fatalf("result %+v", res)
	}
	var sessions []string
	var endSeqs []int64
	for _, ev := range f.events(t) {
		switch ev["event"] {
		case "session.start":
			sessions = append(sessions, ev["session_id"].(string))
		case "session.end":
			endSeqs = append(endSeqs, int64(ev["seq"].(float64)))
		}
	}
	if len(sessions) != 2 || len(endSeqs) != 2 {
		t.Fatalf("sessions %v, session.end seqs %v: want two attempts", sessions, endSeqs)
	}
	var want []string
	for _, sid := range sessions {
		want = append(want, "opened "+sid, "started "+sid, "ended "+sid+" error")
	}
	if !reflect.DeepEqual(obs.facts, want) {
		t.Fatalf("facts\n %q\nwant\n %q", obs.facts, want)
	}
	for i, e := range obs.ends {
		if e.Seq != endSeqs[i] || e.Event == nil || e.Event["seq"] != e.Seq {
			t.Errorf("end %d: seq %d (event %v), want %d", i, e.Seq, e.Event, endSeqs[i])
		}
	}
}

// TestObserverFinalOutput: the fact of a turn that answered carries its
// final output.
func TestObserverFinalOutput(t *testing.T) {
	f := newFixture(t, "say hi")
	obs := &factLog{}
	f.opts.Observer = obs
	if res := New(f.opts, nil).Run(context.Background()); res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	var final string
	for _, ev := range f.events(t) {
		if ev["event"] == "session.end" {
			final, _ = ev["final_output"].(string)
		}
	}
	if len(obs.ends) != 1 || final == "" || obs.ends[0].FinalOutput != final || obs.ends[0].StopReason != sdk.StopEndTurn {
		t.Fatalf("ends %+v, want one with final output %q", obs.ends, final)
	}
}
