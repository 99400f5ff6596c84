package runner

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// chunkTexts joins the message chunk texts of a log.
func chunkTexts(evs []map[string]any) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev["event"] == "agent.message_chunk" {
			c, _ := ev["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// A kept session continues in the same plugin process: no second launch,
// and the session's turn count goes on.
func TestKeptSessionContinuesInProcess(t *testing.T) {
	f := newFixture(t, "announce")
	var launches atomic.Int32
	f.opts.Launch = func(ctx context.Context) (*plugins.Launched, error) {
		launches.Add(1)
		return inProcess(ctx)
	}
	w := event.NewWriter(&f.log, event.Stamp{RunID: f.opts.RunID}, event.Options{})
	f.opts.Writer, f.opts.Events, f.opts.KeepSession = w, nil, true

	first := New(f.opts, nil).Run(context.Background())
	if first.ExitCode != 0 || first.Held == nil {
		t.Fatalf("first run: %+v", first)
	}
	if !first.Held.Alive() || first.Held.SessionID() != first.SessionID {
		t.Fatalf("held session %q alive %v, run session %q", first.Held.SessionID(), first.Held.Alive(), first.SessionID)
	}
	o := f.opts
	o.Held, o.Resume, o.KeepSession = first.Held, first.SessionID, false
	second := New(o, nil).Run(context.Background())
	if second.ExitCode != 0 || second.Held != nil || second.SessionID != first.SessionID {
		t.Fatalf("second run: %+v", second)
	}
	if n := launches.Load(); n != 1 {
		t.Fatalf("%d plugin launches, want 1", n)
	}
	evs := f.events(t)
	if text := chunkTexts(evs); !strings.Contains(text, "turn 1") || !strings.Contains(text, "turn 2") {
		t.Fatalf("chunks %q", text)
	}
	ends := 0
	for i, ev := range evs {
		if ev["seq"] != float64(i+1) {
			t.Fatalf("event %d has seq %v", i+1, ev["seq"])
		}
		if ev["event"] == "session.end" {
			ends++
		}
	}
	if ends != 2 || evs[len(evs)-1]["event"] != "session.end" {
		t.Fatalf("%d session.end; types %v", ends, f.types(t))
	}
	if !first.Held.Alive() {
		// The second run did not keep it: its plugin was stopped.
		return
	}
	t.Fatal("the second run (KeepSession false) left the plugin running")
}

// A kept session whose plugin died is resumed by a fresh plugin.
func TestKeptSessionPluginDiedResumes(t *testing.T) {
	f := newFixture(t, "announce")
	var launches atomic.Int32
	f.opts.Launch = func(ctx context.Context) (*plugins.Launched, error) {
		launches.Add(1)
		return inProcess(ctx)
	}
	f.opts.KeepSession = true
	first := New(f.opts, nil).Run(context.Background())
	if first.Held == nil {
		t.Fatalf("first run: %+v", first)
	}
	first.Held.Plugin().Client.Kill()
	o := f.opts
	o.Held, o.Resume, o.KeepSession = first.Held, first.SessionID, false
	o.Events = &f.log
	second := New(o, nil).Run(context.Background())
	if second.ExitCode != 0 || second.SessionID != first.SessionID || launches.Load() != 2 {
		t.Fatalf("second run: %+v after %d launches", second, launches.Load())
	}
	if text := chunkTexts(f.events(t)); !strings.Contains(text, "turn 2") {
		t.Fatalf("chunks %q", text)
	}
}

// A kept in_process session whose plugin died is lost: the next run says
// so (avenor.error, session.end error) and launches no fresh plugin to
// resume it.
func TestKeptInProcessSessionPluginDiedIsLost(t *testing.T) {
	f := newFixture(t, "announce")
	var launches atomic.Int32
	f.opts.Launch = func(ctx context.Context) (*plugins.Launched, error) {
		launches.Add(1)
		c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, scripted.NewInProcess())
		if err != nil {
			return nil, err
		}
		b, _ := c.Backend("scripted")
		return &plugins.Launched{Client: c, Backend: b, Found: plugins.Found{Family: "scripted", Path: "in-process"}}, nil
	}
	f.opts.KeepSession = true
	first := New(f.opts, nil).Run(context.Background())
	if first.Held == nil {
		t.Fatalf("first run: %+v", first)
	}
	first.Held.Plugin().Client.Kill()
	o := f.opts
	o.Held, o.Resume, o.KeepSession = first.Held, first.SessionID, false
	o.Events = &f.log
	second := New(o, nil).Run(context.Background())
	if second.ExitCode == 0 || second.StopReason != sdk.StopError || launches.Load() != 1 {
		t.Fatalf("second run: %+v after %d launches; want an error and no fresh plugin", second, launches.Load())
	}
	evs := f.events(t)
	var lost bool
	for _, ev := range evs {
		if ev["event"] == "avenor.error" && ev["source"] == "plugin" && strings.Contains(fmt.Sprint(ev["message"]), "is lost") {
			lost = true
		}
	}
	if !lost || evs[len(evs)-1]["event"] != "session.end" {
		t.Fatalf("no session-lost avenor.error or no final session.end: %v", f.types(t))
	}
	if text := chunkTexts(evs); strings.Contains(text, "turn 2") {
		t.Fatalf("the lost session ran a turn: %q", text)
	}
}

// A stopped run keeps nothing.
func TestKeepSessionNotAfterCancel(t *testing.T) {
	f := newFixture(t, "sleep 10s")
	f.opts.KeepSession = true
	ctx, cancel := context.WithCancelCause(context.Background())
	r := New(f.opts, nil)
	go func() {
		for r.Status().TurnState != TurnRunning {
			time.Sleep(10 * time.Millisecond)
		}
		cancel(ErrInterrupted)
	}()
	res := r.Run(ctx)
	if res.ExitCode != 130 || res.Held != nil {
		t.Fatalf("%+v", res)
	}
}
