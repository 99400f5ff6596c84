package event

import (
	"strings"
	"sync"
)

// FinalOutputLimit bounds final_output in control views (status, history,
// subscriptions; docs/events.md#the-envelope and docs/control-protocol.md#spawn). The log keeps it whole.
const FinalOutputLimit = 4096

// FinalOutput synthesizes a session.end final_output when the backend gives
// none (docs/events.md#the-envelope): the agent.message_chunk text received since the last
// tool.call. Text before a tool call is the agent thinking aloud; what it
// says after its last tool is its answer. The zero value is ready to use and
// it is safe for concurrent use.
type FinalOutput struct {
	mu   sync.Mutex
	text strings.Builder
}

// Observe feeds one event: a tool.call clears the text, an
// agent.message_chunk appends its content.text (or delta, which non-ACP
// backends use instead); other events are ignored.
func (f *FinalOutput) Observe(ev Event) {
	switch ev.Type() {
	case TypeToolCall:
		f.Reset()
	case TypeMessageChunk:
		if s := chunkText(ev); s != "" {
			f.mu.Lock()
			f.text.WriteString(s)
			f.mu.Unlock()
		}
	}
}

// ObserveFields is Observe for a plugin event scanned, not decoded.
func (f *FinalOutput) ObserveFields(fl *Fields) {
	switch fl.Type() {
	case TypeToolCall:
		f.Reset()
	case TypeMessageChunk:
		if s := fieldsChunkText(fl); len(s) > 0 {
			f.mu.Lock()
			f.text.Write(s)
			f.mu.Unlock()
		}
	}
}

// fieldsChunkText is chunkText for scanned fields.
func fieldsChunkText(fl *Fields) []byte {
	text, _ := fl.ContentText()
	if len(text) == 0 {
		text, _ = fl.Str("delta")
	}
	return text
}

// Text returns the text gathered since the last tool.call.
func (f *FinalOutput) Text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text.String()
}

// Reset clears the text, as at the start of a new turn.
func (f *FinalOutput) Reset() {
	f.mu.Lock()
	f.text.Reset()
	f.mu.Unlock()
}

// chunkText is a message chunk's text: content.text when it is a non-empty
// string, else delta.
func chunkText(ev Event) string {
	var text string
	switch c := ev["content"].(type) {
	case map[string]any:
		text, _ = c["text"].(string)
	case Event:
		text, _ = c["text"].(string)
	case map[string]string:
		text = c["text"]
	}
	if text == "" {
		text, _ = ev["delta"].(string)
	}
	return text
}

// Truncate returns ev with final_output bounded to runes runes (<= 0:
// FinalOutputLimit) and final_output_truncated set to true, for the control
// views of docs/events.md#the-envelope. When final_output is absent, not a string or short
// enough, ev itself is returned; otherwise a shallow copy, so the shared
// event (and the log) keep the complete text.
func Truncate(ev Event, runes int) Event {
	s, ok := ev["final_output"].(string)
	if !ok {
		return ev
	}
	cut, truncated := TruncateRunes(s, runes)
	if !truncated {
		return ev
	}
	out := make(Event, len(ev)+1)
	for k, v := range ev {
		out[k] = v
	}
	out["final_output"] = cut
	out["final_output_truncated"] = true
	return out
}

// TruncateRunes returns the first n runes of s (<= 0: FinalOutputLimit) and
// whether anything was cut. Invalid UTF-8 bytes count as one rune each.
func TruncateRunes(s string, n int) (string, bool) {
	if n <= 0 {
		n = FinalOutputLimit
	}
	if len(s) <= n { // n bytes are at most n runes
		return s, false
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}
