package watch

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// MaxExcerptRunes bounds an excerpt (docs/watch.md: at most 120 characters).
const MaxExcerptRunes = 120

// envelope are the standard fields of docs/events.md#the-envelope (and ACP bookkeeping) that the
// generic excerpt leaves out: they are on every line and say nothing about
// this one.
var envelope = map[string]bool{
	"event": true, "ts": true, "seq": true, "run_id": true, "run_label": true,
	"runtime_id": true, "session_id": true, "sessionID": true, "session_update": true,
}

// Excerpt is the last column of a plain digest line: one line of at most
// [MaxExcerptRunes] runes, every run of white space (newlines included) and
// control characters collapsed into one space. The forms are the original
// avenor's, so a harness that matches them keeps working:
//
//	agent.message_chunk, agent.thought_chunk, user.message_chunk   the text
//	tool.call, tool.call_update     kind:title [status]   (read:/repo/main.go [pending], read [completed])
//	agent.status                    <phase> | <label>, or <phase> alone
//	permission.request              <question>, or <tool> when there is no question
//	session.plan                    <label>, or <title>
//	session.end                     stop_reason=<reason>
//	avenor.retry                    attempt=<attempt>/<max_retries>, or "retrying" without attempt
//	avenor.loop.start               loop start, max_iterations=<n>
//	avenor.phase.start              phase: <phase> (iter <iteration>)
//	avenor.phase.end                phase: <phase> → <stop_reason>
//	avenor.loop.end                 loop end: <exit_reason>
//	avenor.error                    <source>: <message>, or either alone
//	anything else                   key=value for every non-envelope field, sorted by key
//
// The last row is ours: the original printed nothing there, and a line that
// says which fields an unknown event carries costs a harness nothing.
func Excerpt(ev Event) string { return clip(rawExcerpt(ev), MaxExcerptRunes) }

func rawExcerpt(ev Event) string {
	switch ev.Name() {
	case sdk.EventMessageChunk, sdk.EventThoughtChunk, sdk.EventUserMessageChunk:
		return ev.chunkText()
	case sdk.EventToolCall, sdk.EventToolCallUpdate:
		return toolExcerpt(ev)
	case sdk.EventAgentStatus:
		return joinNonEmpty(" | ", ev.str("phase"), ev.str("label"))
	case sdk.EventPermissionRequest:
		if q := ev.str("question"); q != "" {
			return q
		}
		return ev.str("tool")
	case sdk.EventPlan:
		if l := ev.str("label"); l != "" {
			return l
		}
		return ev.str("title")
	case sdk.EventSessionEnd:
		return "stop_reason=" + ev.str("stop_reason")
	case sdk.EventRetry:
		a := ev.str("attempt")
		if a == "" {
			return "retrying"
		}
		return "attempt=" + joinNonEmpty("/", a, ev.str("max_retries"))
	case sdk.EventLoopStart:
		return joinNonEmpty(", max_iterations=", "loop start", ev.str("max_iterations"))
	case sdk.EventPhaseStart:
		s := "phase: " + ev.str("phase")
		if it := ev.str("iteration"); it != "" {
			s += " (iter " + it + ")"
		}
		return s
	case sdk.EventPhaseEnd:
		return "phase: " + ev.str("phase") + " → " + ev.str("stop_reason")
	case sdk.EventLoopEnd:
		return "loop end: " + ev.str("exit_reason")
	case sdk.EventError:
		return joinNonEmpty(": ", ev.str("source"), ev.str("message"))
	}
	return compact(ev)
}

// toolExcerpt renders kind:title [status]; a missing kind or title leaves
// the other alone (an update usually has no title).
func toolExcerpt(ev Event) string {
	head := joinNonEmpty(":", ev.str("kind"), ev.str("title"))
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
// line: white space and control characters become "_", at most
// MaxExcerptRunes runes; "" stays "" (the column is then empty, as in the
// original).
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
	return b.String()
}
