package runner

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// The status snapshot is host/control's (control.Status); the runner keeps
// it. These names stay so that the runner's callers read as before.
type Status = control.Status

// Turn states and agent phases of the snapshot.
const (
	TurnIdle       = control.TurnIdle
	TurnStarting   = control.TurnStarting
	TurnRunning    = control.TurnRunning
	TurnEnding     = control.TurnEnding
	TurnCancelling = control.TurnCancelling
	TurnEnded      = control.TurnEnded

	PhaseIdle     = control.PhaseIdle
	PhaseThinking = control.PhaseThinking
	PhaseWorking  = control.PhaseWorking
	PhaseWaiting  = control.PhaseWaiting
	PhaseDone     = control.PhaseDone
	PhaseEnded    = control.PhaseEnded
)

// statusTracker keeps the snapshot and synthesises agent.status events. It
// runs in every run, with or without a control socket.
type statusTracker struct {
	now func() time.Time

	mu sync.Mutex
	st Status
	// markerLabel is the label of the agent's last status marker; it
	// survives a permission wait (docs/events.md#host-events).
	markerLabel string
}

func newStatusTracker(runID, label string, maxRetries int, now func() time.Time) *statusTracker {
	t := now().UnixMilli()
	return &statusTracker{now: now, st: Status{
		RunID: runID, RunLabel: label, MaxRetries: maxRetries, Phase: PhaseIdle,
		TurnState: TurnIdle, StartedAt: t, UpdatedAt: t, RetryAttempt: 1,
	}}
}

func (t *statusTracker) snapshot() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.st
	return s
}

func (t *statusTracker) update(f func(*Status)) {
	t.mu.Lock()
	f(&t.st)
	t.st.UpdatedAt = t.now().UnixMilli()
	t.mu.Unlock()
}

// before returns the agent.status events to write before ev (docs/events.md#agentstatus:
// synthesised statuses precede the event that triggers them).
func (t *statusTracker) before(ev event.Event) []event.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []event.Event
	set := func(phase, label, source string) {
		if phase == t.st.Phase && label == t.st.PhaseLabel {
			return
		}
		t.st.Phase, t.st.PhaseLabel = phase, label
		st := event.Event{"event": string(event.TypeAgentStatus), "phase": phase, "source": source}
		if label != "" {
			st["label"] = label
		}
		out = append(out, st)
	}
	switch ev.Type() {
	case event.TypeThoughtChunk:
		if t.st.Phase != PhaseThinking && t.st.Phase != PhaseWaiting && t.st.Phase != PhaseDone {
			set(PhaseThinking, "", "avenor")
		}
	case event.TypeToolCall:
		title, _ := ev["title"].(string)
		t.markerLabel = ""
		set(PhaseWorking, title, "avenor")
	case event.TypePermissionRequest:
		label, _ := ev["question"].(string)
		if label == "" {
			label, _ = ev["tool"].(string)
		}
		set(PhaseWaiting, label, "avenor")
	case event.TypeQuestionRequest:
		// The runtime waits for the user's answer, as for a permission.
		label := ""
		if ps, _ := ev["prompts"].([]any); len(ps) > 0 {
			if p, _ := ps[0].(map[string]any); p != nil {
				label, _ = p["question"].(string)
			}
		}
		set(PhaseWaiting, label, "avenor")
	case event.TypePermissionResponse, event.TypeQuestionResponse:
		set(PhaseWorking, t.markerLabel, "avenor")
	case event.TypeSessionEnd:
		t.markerLabel = ""
		set(PhaseDone, "", "avenor")
	}
	switch ev.Type() {
	case event.TypeMessageChunk, event.TypeThoughtChunk:
		for _, m := range ParseStatusMarkers(chunkText(ev)) {
			t.markerLabel = m.Label
			set(m.Phase, m.Label, "agent")
		}
	}
	return out
}

// after records a written event in the snapshot.
func (t *statusTracker) after(ev event.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.LastEvent = ev.Type()
	if seq, ok := ev["seq"].(int64); ok {
		t.st.LatestSeq = seq
	}
	if sid, _ := ev["session_id"].(string); sid != "" {
		t.st.SessionID = sid
	}
	switch ev.Type() {
	case event.TypePermissionRequest:
		t.st.PendingPermission = true
		t.st.Permission = ev
	case event.TypePermissionResponse:
		t.st.PendingPermission = false
		t.st.Permission = nil
	}
	t.st.UpdatedAt = t.now().UnixMilli()
}

func chunkText(ev event.Event) string {
	if c, ok := ev["content"].(map[string]any); ok {
		if s, ok := c["text"].(string); ok {
			return s
		}
	}
	s, _ := ev["delta"].(string)
	return s
}

// StatusMarker is an agent's own status line.
type StatusMarker struct{ Phase, Label string }

var (
	legacyMarker = regexp.MustCompile(`(?i)\[status:\s*([a-z]+)\s*(?:\|\s*([^\]\n]*?))?\s*\]`)
	lineMarker   = regexp.MustCompile(`(?m)^\s*<\|status:\s*([a-zA-Z]+)\s*(?:\|\s*(.*?))?\s*\|>\s*$`)
)

// ParseStatusMarkers finds `[status: <phase> | <label>]` anywhere in text
// (legacy, case-insensitive) and `<|status: <phase> | <label>|>` on a line of
// its own, in order of appearance; unknown phases are ignored.
func ParseStatusMarkers(text string) []StatusMarker {
	if !strings.Contains(text, "status:") && !strings.Contains(strings.ToLower(text), "status:") {
		return nil
	}
	type hit struct {
		at int
		m  StatusMarker
	}
	var hits []hit
	for _, re := range []*regexp.Regexp{legacyMarker, lineMarker} {
		for _, loc := range re.FindAllStringSubmatchIndex(text, -1) {
			phase := strings.ToLower(text[loc[2]:loc[3]])
			label := ""
			if loc[4] >= 0 {
				label = strings.TrimSpace(text[loc[4]:loc[5]])
			}
			switch phase {
			case PhaseThinking, PhaseWorking, PhaseWaiting, PhaseDone:
				hits = append(hits, hit{loc[0], StatusMarker{phase, label}})
			}
		}
	}
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && hits[j].at < hits[j-1].at; j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
	out := make([]StatusMarker, len(hits))
	for i, h := range hits {
		out[i] = h.m
	}
	return out
}

// beforeFields is before for a plugin event scanned, not decoded.
func (t *statusTracker) beforeFields(f *event.Fields) []event.Event {
	switch f.Type() {
	case event.TypeThoughtChunk, event.TypeToolCall, event.TypePermissionRequest, event.TypePermissionResponse, event.TypeSessionEnd:
	case event.TypeMessageChunk:
		// The common case, a chunk without a status marker: nothing to
		// synthesise and nothing to decode.
		if !mayHoldMarker(fieldsChunkText(f)) {
			return nil
		}
	default:
		return nil
	}
	// Rare enough to read as a map: the few members before reads.
	ev := event.Event{"event": string(f.Type())}
	for _, k := range []string{"title", "question", "tool", "delta"} {
		if s, ok := f.Str(k); ok {
			ev[k] = string(s)
		}
	}
	if s, ok := f.ContentText(); ok {
		ev["content"] = map[string]any{"text": string(s)}
	}
	return t.before(ev)
}

// afterFields is after for a plugin event WriteFields wrote.
func (t *statusTracker) afterFields(f *event.Fields, st event.Stamped) {
	switch f.Type() {
	case event.TypePermissionRequest, event.TypePermissionResponse:
		t.after(st.Event())
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.LastEvent = f.Type()
	t.st.LatestSeq = st.Seq
	if st.SessionID != "" {
		t.st.SessionID = st.SessionID
	} else if sid, ok := f.Str(event.KeySessionID); ok && len(sid) > 0 && string(sid) != t.st.SessionID {
		t.st.SessionID = string(sid)
	}
	t.st.UpdatedAt = t.now().UnixMilli()
}

// fieldsChunkText is chunkText for scanned fields: content.text when it is
// a string, else delta.
func fieldsChunkText(f *event.Fields) []byte {
	if s, ok := f.ContentText(); ok {
		return s
	}
	s, _ := f.Str("delta")
	return s
}

// mayHoldMarker reports whether text may hold a status marker: whether it
// holds "status:" in any ASCII case, which every text ParseStatusMarkers
// finds a marker in does.
func mayHoldMarker(text []byte) bool {
	const want = "status:"
	for i := 0; i+len(want) <= len(text); i++ {
		j := 0
		for ; j < len(want); j++ {
			c := text[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != want[j] {
				break
			}
		}
		if j == len(want) {
			return true
		}
	}
	return false
}
