package watch

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxExcerptRunes bounds an excerpt (contract §1.5: at most 120 characters).
const MaxExcerptRunes = 120

// Event names the digest and the classifier treat specially (contract §2).
const (
	evMessageChunk = "agent.message_chunk"
	evThoughtChunk = "agent.thought_chunk"
	evUserChunk    = "user.message_chunk"
	evToolCall     = "tool.call"
	evToolUpdate   = "tool.call_update"
	evStatus       = "agent.status"
	evSessionEnd   = "session.end"
	evPermRequest  = "permission.request"
	evError        = "avenor.error"
	evRetry        = "avenor.retry"
	evLoopStart    = "avenor.loop.start"
	evLoopEnd      = "avenor.loop.end"
	evPhaseStart   = "avenor.phase.start"
	evPhaseEnd     = "avenor.phase.end"
)

// envelope are the standard fields of §2.1 (and ACP bookkeeping) that the
// generic excerpt leaves out: they are on every line and say nothing about
// this one.
var envelope = map[string]bool{
	"event": true, "ts": true, "seq": true, "run_id": true, "run_label": true,
	"runtime_id": true, "session_id": true, "session_update": true,
}

// Excerpt is the last column of a plain digest line: one line of at most
// [MaxExcerptRunes] runes, every run of white space (newlines included) and
// control characters collapsed into one space. Per event:
//
//	agent.message_chunk, agent.thought_chunk, user.message_chunk   the text
//	tool.call, tool.call_update     kind:title [status]   (read:/repo/main.go [pending], read [completed])
//	avenor.phase.start              phase: <phase> (iter <iteration>)
//	avenor.phase.end                phase: <phase> → <stop_reason> [exit|abort: <marker label>]
//	session.end                     stop_reason=<reason> [error=<error>]
//	agent.status                    <phase>[: <label>]
//	permission.request              <tool>: <question>   (either alone when the other is missing)
//	avenor.error                    <source>: <message>
//	anything else                   key=value for every non-envelope field, sorted by key
func Excerpt(ev Event) string { return clip(rawExcerpt(ev), MaxExcerptRunes) }

func rawExcerpt(ev Event) string {
	switch ev.Name() {
	case evMessageChunk, evThoughtChunk, evUserChunk:
		return ev.chunkText()
	case evToolCall, evToolUpdate:
		return toolExcerpt(ev)
	case evPhaseStart:
		s := "phase: " + ev.str("phase")
		if it := ev.str("iteration"); it != "" {
			s += " (iter " + it + ")"
		}
		return s
	case evPhaseEnd:
		s := "phase: " + ev.str("phase")
		if r := ev.str("stop_reason"); r != "" {
			s += " → " + r
		}
		switch {
		case ev.truthy("abort_marker"):
			s += " [abort: " + ev.str("abort_marker_label") + "]"
		case ev.truthy("exit_marker"):
			s += " [exit: " + ev.str("exit_marker_label") + "]"
		}
		return s
	case evSessionEnd:
		s := "stop_reason=" + ev.str("stop_reason")
		for _, k := range []string{"error", "error_message"} {
			if e := ev.str(k); e != "" {
				s += " error=" + e
				break
			}
		}
		return s
	case evStatus:
		return joinNonEmpty(": ", ev.str("phase"), ev.str("label"))
	case evPermRequest:
		tool, q := ev.str("tool"), ev.str("question")
		if tool != "" && strings.Contains(q, tool) {
			tool = ""
		}
		return joinNonEmpty(": ", tool, q)
	case evError:
		return joinNonEmpty(": ", ev.str("source"), ev.str("message"))
	}
	return compact(ev)
}

// toolExcerpt renders kind:title [status]; a missing kind or title leaves
// the other alone (an update usually has no title), and a title equal to
// the kind is not repeated.
func toolExcerpt(ev Event) string {
	kind, title := ev.str("kind"), ev.str("title")
	if title == kind {
		title = ""
	}
	head := joinNonEmpty(":", kind, title)
	if head == "" {
		head = joinNonEmpty("", ev.str("toolCallId"), ev.str("tool_use_id"))
	}
	if st := ev.str("status"); st != "" {
		return joinNonEmpty(" ", head, "["+st+"]")
	}
	return head
}

// compactBudget stops the generic rendering long before a huge payload is
// copied: only the first MaxExcerptRunes runes survive anyway.
const compactBudget = 8 * MaxExcerptRunes

// compact renders the non-envelope fields as key=value, sorted by key:
// strings as they are (quoted when they hold white space), objects and arrays
// as compact JSON.
func compact(ev Event) string {
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if !envelope[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > compactBudget {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(compactValue(ev[k]))
	}
	return b.String()
}

func compactValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		v = prefix(v, compactBudget)
		if strings.IndexFunc(v, unicode.IsSpace) >= 0 || v == "" {
			return `"` + v + `"`
		}
		return v
	case map[string]any, []any:
		b, err := json.Marshal(v)
		if err != nil {
			return "?"
		}
		return prefix(string(b), compactBudget)
	}
	return scalar(v)
}

// prefix cuts s to at most n bytes without splitting a rune.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func joinNonEmpty(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

// clip makes s one printable line of at most max runes: each run of white
// space and control characters (which could move a terminal's cursor)
// becomes one space, invalid UTF-8 becomes U+FFFD, the ends are trimmed, and
// a cut is marked with "…" (counted in max). It stops reading s as soon as it
// knows the result, so a 64 MiB chunk costs no more than a short one.
func clip(s string, max int) string {
	out := make([]rune, 0, max+1)
	gap := false
	for _, r := range s {
		if blank(r) {
			gap = len(out) > 0
			continue
		}
		if gap {
			out = append(out, ' ')
			gap = false
		}
		out = append(out, r)
		if len(out) > max {
			out = out[:max-1]
			for len(out) > 0 && out[len(out)-1] == ' ' {
				out = out[:len(out)-1]
			}
			return string(out) + "…"
		}
	}
	return string(out)
}

// blank is white space, a control character or a bidi control: nothing a
// digest line should carry verbatim.
func blank(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// token makes a field usable as one space-separated column of a digest
// line: white space and control characters become "_", at most max runes,
// "-" when empty.
func token(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == MaxExcerptRunes {
			break
		}
		if blank(r) {
			r = '_'
		}
		b.WriteRune(r)
		n++
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
