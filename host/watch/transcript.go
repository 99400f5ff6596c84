package watch

import (
	"strconv"
	"strings"
	"unicode"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// transcript is the state of --format transcript: a run retold for a
// person — the agent's messages joined as they were streamed, tool calls
// with their status, permission requests with their answers, retries,
// errors and the end. Thought chunks, status updates and bookkeeping are
// left out (the digest and json formats keep them).
type transcript struct {
	midLine bool              // the agent's text stopped mid-line
	tools   map[string]string // toolCallId → title, for the updates
}

// MaxTranscriptTools bounds the tool titles remembered for their updates.
const MaxTranscriptTools = 1024

// TranscriptLineRunes bounds one transcript line other than the agent's
// own text (a title, a question, an error).
const TranscriptLineRunes = 200

func (t *transcript) appendEvent(dst []byte, ev Event) []byte {
	switch ev.Name() {
	case sdk.EventMessageChunk:
		text := printable(ev.chunkText())
		if text == "" {
			return dst
		}
		t.midLine = !strings.HasSuffix(text, "\n")
		return append(dst, text...)
	case sdk.EventSessionStart:
		return t.line(dst, "● session "+joinNonEmpty(" · ", ev.SessionID(), ev.str("backend"), ev.str("model")))
	case sdk.EventTurnStart:
		if n := ev.str("turn"); n != "" && n != "1" {
			return t.line(dst, "── turn "+n)
		}
	case sdk.EventToolCall:
		title := t.remember(ev)
		line := "▸ " + title
		if k := ev.str("kind"); k != "" && k != title {
			line += " [" + k + "]"
		}
		dst = t.line(dst, line)
		return t.toolStatus(dst, ev, title)
	case sdk.EventToolCallUpdate:
		title := t.tools[ev.str("toolCallId")]
		if title == "" {
			title = oneLine(firstOf(ev.str("title"), ev.str("kind"), "tool"))
		}
		return t.toolStatus(dst, ev, title)
	case sdk.EventPermissionRequest:
		what := oneLine(firstOf(ev.str("question"), ev.str("tool"), "permission requested"))
		if tool := ev.str("tool"); tool != "" && tool != ev.str("question") {
			what += " (tool " + oneLine(tool) + ")"
		}
		dst = t.line(dst, "? permission "+ev.str("request_id")+": "+what)
		if opts := optionWords(ev); opts != "" {
			dst = t.line(dst, "  options: "+opts)
		}
		return dst
	case sdk.EventPermissionResponse:
		by := " by " + firstOf(ev.str("source"), "?")
		switch {
		case ev.str("outcome") == "cancelled":
			return t.line(dst, "  ✗ cancelled"+by)
		case ev.str("kind") == "allow":
			return t.line(dst, "  ✓ allowed: "+ev.str("option_id")+by)
		}
		return t.line(dst, "  ✗ rejected: "+ev.str("option_id")+by)
	case sdk.EventRetry:
		line := "↻ retrying"
		if a := ev.str("attempt"); a != "" {
			line += ": attempt " + a
			if n, err := strconv.Atoi(ev.str("max_retries")); err == nil {
				line += " of " + strconv.Itoa(n+1)
			}
		}
		return t.line(dst, line)
	case sdk.EventError:
		return t.line(dst, "✗ error: "+oneLine(rawExcerpt(ev)))
	case sdk.EventWarning:
		return t.line(dst, "! "+oneLine(firstOf(ev.str("message"), ev.str("warning"))))
	case sdk.EventPhaseStart, sdk.EventPhaseEnd, sdk.EventLoopEnd:
		return t.line(dst, "◆ "+oneLine(rawExcerpt(ev)))
	case sdk.EventSessionEnd:
		end := "■ " + firstOf(ev.str("stop_reason"), "ended")
		if u, ok := ev["usage"].(map[string]any); ok {
			in, out := scalar(u["input_tokens"]), scalar(u["output_tokens"])
			if in != "" || out != "" {
				end += " · " + firstOf(in, "0") + " in / " + firstOf(out, "0") + " out tokens"
			}
		}
		return t.line(dst, end)
	}
	return dst
}

// line appends s on a line of its own.
func (t *transcript) line(dst []byte, s string) []byte {
	dst = t.finish(dst)
	return append(append(dst, s...), '\n')
}

// finish ends the agent's text that stopped mid-line.
func (t *transcript) finish(dst []byte) []byte {
	if t.midLine {
		dst = append(dst, '\n')
		t.midLine = false
	}
	return dst
}

func (t *transcript) toolStatus(dst []byte, ev Event, title string) []byte {
	switch ev.str("status") {
	case "completed":
		return t.line(dst, "  ✓ "+title)
	case "failed":
		return t.line(dst, "  ✗ "+title+" failed")
	}
	return dst
}

func (t *transcript) remember(ev Event) string {
	title := oneLine(firstOf(ev.str("title"), ev.str("kind"), "tool"))
	if id := ev.str("toolCallId"); id != "" {
		if t.tools == nil {
			t.tools = map[string]string{}
		}
		if len(t.tools) >= MaxTranscriptTools {
			clear(t.tools) // older tools' updates fall back to their own title
		}
		t.tools[id] = title
	}
	return title
}

// optionWords names a request's options once: "once: Allow once".
func optionWords(ev Event) string {
	raw, _ := ev["options"].([]any)
	var out []string
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		id := scalar(m["optionId"])
		words := firstOf(scalar(m["name"]), scalar(m["kind"]))
		if words != "" && words != id {
			id += ": " + words
		}
		out = append(out, oneLine(id))
	}
	return strings.Join(out, ", ")
}

// oneLine is s on one line, clipped.
func oneLine(s string) string { return clip(s, TranscriptLineRunes) }

// printable is the agent's text without control characters (an escape
// sequence in a message must not drive the reader's terminal); newlines
// and tabs stay.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, s)
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
