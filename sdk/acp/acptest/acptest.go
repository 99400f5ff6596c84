// Package acptest helps test the ACP plugins: it builds the fake ACP agent
// (sdk/acp/internal/fakeagent, which behaves like opencode acp, gemini --acp
// or Cursor's agent acp) and records what a session sends its host.
//
// Import it from tests only.
package acptest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugintest"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// BuildFakeAgent builds the fake ACP agent as dir/name and returns its
// path. It needs this repository's source (the sdk module), as the plugins'
// tests have through their replace directive.
func BuildFakeAgent(t testing.TB, dir, name string) string {
	t.Helper()
	out, err := FakeAgent(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FakeAgent is BuildFakeAgent for a TestMain.
func FakeAgent(dir, name string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("acptest: cannot locate the fake agent's source")
	}
	sdkDir := filepath.Join(filepath.Dir(file), "..", "..")
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "./acp/internal/fakeagent")
	cmd.Dir = sdkDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("acptest: building the fake agent: %v\n%s", err, b)
	}
	return out, nil
}

// ReadLog reads the fake agent's FAKEACP_LOG: its argv/env line first,
// then every message it received.
func ReadLog(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("acptest: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// Methods lists the methods in a fake agent log, in order.
func Methods(log []map[string]any) []string {
	var out []string
	for _, m := range log {
		if s, ok := m["method"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Host is a runtime.Host that records every event and permission request
// in order and answers permissions with Decide (nil: cancelled).
type Host struct {
	// Decide answers a permission request; it may block until ctx ends.
	Decide func(ctx context.Context, req sdk.PermissionRequest) (sdk.PermissionDecision, error)
	// OnEvent, when set, sees every event as it is emitted.
	OnEvent func(ev sdk.Event)

	mu       sync.Mutex
	events   []sdk.Event
	requests []sdk.PermissionRequest
	procs    []sdk.ProcessInfo
}

// Emit implements runtime.Host.
func (h *Host) Emit(ev sdk.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	on := h.OnEvent
	h.mu.Unlock()
	if on != nil {
		on(ev)
	}
}

// AskPermission implements runtime.Host; the request is also recorded as
// a "permission.request" event.
func (h *Host) AskPermission(ctx context.Context, req sdk.PermissionRequest) (sdk.PermissionDecision, error) {
	h.mu.Lock()
	h.requests = append(h.requests, req)
	h.events = append(h.events, sdk.NewEvent(sdk.EventPermissionRequest, map[string]any{"request_id": req.ID}))
	decide := h.Decide
	h.mu.Unlock()
	if decide == nil {
		return sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}, errors.New("acptest: no Decide")
	}
	return decide(ctx, req)
}

// Logger implements runtime.Host.
func (h *Host) Logger() hclog.Logger { return hclog.NewNullLogger() }

// RecordProcess implements runtime.ProcessRecorder.
func (h *Host) RecordProcess(p sdk.ProcessInfo) {
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
}

// Events returns the events so far.
func (h *Host) Events() []sdk.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.Event(nil), h.events...)
}

// Of returns the events of one type.
func (h *Host) Of(typ sdk.EventType) []sdk.Event {
	var out []sdk.Event
	for _, ev := range h.Events() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// Types lists the event types in order.
func (h *Host) Types() []sdk.EventType {
	var out []sdk.EventType
	for _, ev := range h.Events() {
		out = append(out, ev.Type)
	}
	return out
}

// Requests returns the permission requests so far.
func (h *Host) Requests() []sdk.PermissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.PermissionRequest(nil), h.requests...)
}

// Processes returns the processes recorded.
func (h *Host) Processes() []sdk.ProcessInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sdk.ProcessInfo(nil), h.procs...)
}

// ByKind answers with the first option whose kind normalises to kind
// ("allow" or "reject").
func ByKind(kind string) func(context.Context, sdk.PermissionRequest) (sdk.PermissionDecision, error) {
	return func(_ context.Context, req sdk.PermissionRequest) (sdk.PermissionDecision, error) {
		for _, o := range req.Options {
			if sdk.NormalizeKind(o.Kind) == kind {
				return sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: o.ID, Kind: sdk.DecisionKind(o.Kind)}, nil
			}
		}
		return sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}, errors.New("acptest: no option of kind " + kind)
	}
}

// FinalText joins the agent.message_chunk texts.
func (h *Host) FinalText() string {
	var s string
	for _, ev := range h.Of(sdk.EventMessageChunk) {
		if c, ok := ev.Fields["content"].(map[string]any); ok {
			t, _ := c["text"].(string)
			s += t
		}
	}
	return s
}

// Prompt is a plugintest.Harness.Prompt that makes the fake agent run each
// kind of turn the conformance kit asks for.
func Prompt(_ string, kind plugintest.TurnKind) (string, bool) {
	switch kind {
	case plugintest.TurnPlain:
		return "say ok", true
	case plugintest.TurnLong:
		return "SLOW", true
	case plugintest.TurnPermission:
		return "write out.txt", true
	}
	return "", false
}
