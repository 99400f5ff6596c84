package runner

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// MaxDenialEvents bounds the avenor.sandbox.denied events one attempt of
// a run writes; later denials are not reported (a tool that walks a tree
// it may not write would otherwise flood the stream).
const MaxDenialEvents = 256

// denials turns what a sandboxed session's tools show into
// avenor.sandbox.denied events (docs/sandbox.md#denials). A run without a
// sandbox has none: its stream is exactly as before, and nothing of it is
// decoded for this.
type denials struct {
	sb sdk.Sandbox

	mu sync.Mutex
	// seen are the (tool, op, path) already reported, at most
	// MaxDenialEvents.
	seen map[[3]string]bool
}

func newDenials(sb sdk.Sandbox) *denials {
	if !sb.Active() {
		return nil
	}
	return &denials{sb: sb, seen: map[[3]string]bool{}}
}

// skipKeys are a tool event's fields that say what was asked, not what
// happened: a command or a file's new content may mention any path.
var skipKeys = map[string]bool{
	"event": true, "rawInput": true, "title": true, "kind": true, "status": true,
	"toolCallId": true, "session_update": true, "locations": true, "input": true, "args": true,
}

// fromJSON are the events of a tool's output (or of a plugin's error)
// that arrived as JSON.
func (d *denials) fromJSON(typ sdk.EventType, data []byte) []event.Event {
	if d == nil || typ != sdk.EventToolCallUpdate && typ != sdk.EventError || len(data) == 0 {
		return nil
	}
	var fields map[string]any
	if json.Unmarshal(data, &fields) != nil {
		return nil
	}
	return d.fromFields(typ, fields)
}

// fromFields are the events of a tool's output, its fields decoded; of a
// plugin's avenor.error, the launch denials its message quotes.
func (d *denials) fromFields(typ sdk.EventType, fields map[string]any) []event.Event {
	if d == nil {
		return nil
	}
	if typ == sdk.EventError {
		msg, _ := fields["message"].(string)
		return d.fromError(msg)
	}
	if typ != sdk.EventToolCallUpdate {
		return nil
	}
	if status, _ := fields["status"].(string); status != "" && status != "completed" && status != "failed" {
		// A streamed piece of output ("bwrap: " alone) is no whole line
		// to classify: the tool's end carries its output whole.
		return nil
	}
	var text strings.Builder
	collectText(&text, fields)
	tool, _ := fields["toolCallId"].(string)
	found := sandbox.Denials(d.sb, text.String())
	if len(found) == 0 {
		found = failedEdits(d.sb, fields)
	}
	return d.events(tool, found)
}

// editKinds are the tool kinds that write the files their locations name.
var editKinds = map[string]bool{"edit": true, "write": true, "delete": true, "move": true}

// failedEdits are the denials of a failed edit whose output gave no errno:
// each location outside the writable paths (sandbox.FailedEditDenial).
func failedEdits(sb sdk.Sandbox, fields map[string]any) []sandbox.Denial {
	status, _ := fields["status"].(string)
	kind, _ := fields["kind"].(string)
	if status != "failed" || !editKinds[kind] {
		return nil
	}
	locs, _ := fields["locations"].([]any)
	var out []sandbox.Denial
	for _, l := range locs {
		loc, _ := l.(map[string]any)
		path, _ := loc["path"].(string)
		if d, ok := sandbox.FailedEditDenial(sb, path); ok && len(out) < sandbox.MaxDenialsPerOutput {
			out = append(out, d)
		}
	}
	return out
}

// fromError are the launch denials an error of the run names: bwrap's
// own failure, quoted by the plugin that could not start its runtime.
func (d *denials) fromError(msg string) []event.Event {
	if d == nil {
		return nil
	}
	return d.events("", sandbox.LaunchDenials(d.sb, msg))
}

// events are the not yet reported denials as events.
func (d *denials) events(tool string, found []sandbox.Denial) []event.Event {
	if len(found) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []event.Event
	for _, den := range found {
		key := [3]string{tool, den.Op, den.Path}
		if d.seen[key] || len(d.seen) >= MaxDenialEvents {
			continue
		}
		d.seen[key] = true
		ev := event.Event{"event": string(event.TypeSandboxDenied), "op": den.Op, "path": den.Path}
		if tool != "" {
			ev["tool"] = tool
		}
		if den.Message != "" {
			ev["message"] = den.Message
		}
		out = append(out, ev)
	}
	return out
}

// collectText appends every string v holds to b (but those under
// skipKeys), a line each, until b holds sandbox.MaxDenialScanBytes.
func collectText(b *strings.Builder, v any) {
	if b.Len() >= sandbox.MaxDenialScanBytes {
		return
	}
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			collectText(b, e)
		}
	case map[string]any:
		// In key order: the same output reports the same denials in the
		// same order.
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !skipKeys[k] {
				collectText(b, v[k])
			}
		}
	}
}

// setSandbox makes the session report what sb refuses its tools, afresh
// for each attempt (the bounds are an attempt's).
func (h *sessionHost) setSandbox(sb sdk.Sandbox) {
	h.mu.Lock()
	h.denied = newDenials(sb)
	h.mu.Unlock()
}

// deniedOf is the session's denials, nil without a sandbox.
func (h *sessionHost) deniedOf() *denials {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.denied
}

// emitDenied writes the denial events evs, each right after what showed it.
func (h *sessionHost) emitDenied(evs []event.Event) {
	for _, ev := range evs {
		h.emitEvent(ev, true)
	}
}
