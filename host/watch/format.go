package watch

import (
	"encoding/json"
	"fmt"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Format is the output format of `avenor watch --format`.
type Format string

// The two formats (docs/watch.md).
const (
	// Plain prints one digest line per event: EVENT <event> <session_id> <excerpt>,
	// the separators kept around an empty session or excerpt.
	Plain Format = "plain"
	// JSON passes each event line through unchanged.
	JSON Format = "json"
	// Transcript retells the run for a person: messages joined, tool calls
	// with their status, permissions and their answers, the end. Ours, not
	// the original's; the default of `avenor watch` on a terminal.
	Transcript Format = "transcript"
)

// ParseFormat validates a --format value; "" is [Plain].
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", Plain:
		return Plain, nil
	case JSON:
		return JSON, nil
	case Transcript:
		return Transcript, nil
	}
	return "", fmt.Errorf("--format must be plain, json or transcript, not %q", s)
}

// Digest is what a plain line says about one event.
type Digest struct {
	// Event is the event name as one token (never empty: events without a
	// name are not digested).
	Event string
	// SessionID is the session id (session_id, else sessionID) as one
	// token, "" when the event has none.
	SessionID string
	// Excerpt is at most [MaxExcerptRunes] runes on one line; may be empty.
	Excerpt string
	// Class is the event's [Classify] result.
	Class Class
}

// Summarize digests a decoded event.
func Summarize(ev Event) Digest {
	return Digest{Event: token(string(ev.Name())), SessionID: token(ev.SessionID()), Excerpt: Excerpt(ev), Class: Classify(ev)}
}

// DigestLine digests one log line; ok is false when the line is malformed
// or has no "event" field (such lines print nothing).
func DigestLine(line []byte) (d Digest, ok bool) {
	ev, err := ParseLine(line)
	if err != nil || ev.Name() == "" {
		return Digest{}, false
	}
	return Summarize(ev), true
}

// ANSI colours for a terminal: milestones stand out, activity recedes,
// errors are red.
const (
	ansiReset     = "\x1b[0m"
	ansiDim       = "\x1b[2m"
	ansiRed       = "\x1b[1;31m"
	ansiMilestone = "\x1b[1;32m"
	ansiFinding   = "\x1b[1;33m"
	ansiActivity  = "\x1b[36m"
)

// Printer renders events in one format. The zero value prints plain lines
// without classification or colour.
type Printer struct {
	// Format is Plain (the zero value) or JSON.
	Format Format
	// Classify prefixes plain lines with the class, or adds a top-level
	// "classify" field to JSON lines.
	Classify bool
	// Color adds ANSI colours to plain lines; JSON is never coloured.
	Color bool

	// t is the transcript's state across events (Transcript); NewPrinter
	// makes it. Without it each event is retold on its own.
	t *transcript
}

// NewPrinter is a printer for one stream of events: a transcript keeps
// what it needs from one event to the next (the agent's text mid-line,
// tool titles).
func NewPrinter(p Printer) Printer {
	if p.Format == Transcript && p.t == nil {
		p.t = &transcript{}
	}
	return p
}

// Finish appends what the last event left open (the transcript's
// unfinished line); call it once after the last Append.
func (p Printer) Finish(dst []byte) []byte {
	if p.t == nil {
		return dst
	}
	return p.t.finish(dst)
}

// Append appends the output for one event, newline included, to dst. raw is
// the event's line as read, without its newline; ev is that line decoded.
// For JSON with Classify, ev gains the "classify" field (replacing one the
// line may have had) and is re-encoded the way the log writer encodes
// (sorted keys, HTML-escaped); without Classify, raw is copied unchanged.
func (p Printer) Append(dst, raw []byte, ev Event) ([]byte, error) {
	if p.Format == Transcript {
		if p.t == nil { // one event on its own: its line ends here
			t := &transcript{}
			return t.finish(t.appendEvent(dst, ev)), nil
		}
		return p.t.appendEvent(dst, ev), nil
	}
	if p.Format == JSON {
		if !p.Classify {
			return append(append(dst, raw...), '\n'), nil
		}
		ev["classify"] = string(Classify(ev))
		b, err := json.Marshal(ev)
		if err != nil {
			return dst, fmt.Errorf("re-encoding %s event: %w", ev.Name(), err)
		}
		return append(append(dst, b...), '\n'), nil
	}
	return p.appendPlain(dst, Summarize(ev), isFailure(ev)), nil
}

func (p Printer) appendPlain(dst []byte, d Digest, failure bool) []byte {
	paint := func(code, s string) {
		if p.Color {
			dst = append(append(append(dst, code...), s...), ansiReset...)
		} else {
			dst = append(dst, s...)
		}
	}
	code := classColor(d.Class)
	if failure {
		code = ansiRed
	}
	if p.Classify {
		paint(code, string(d.Class))
		dst = append(dst, ' ')
	}
	dst = append(dst, "EVENT "...)
	paint(code, d.Event)
	// Both separators stay when a column is empty, as in the original: the
	// excerpt is always what follows the third space.
	dst = append(dst, ' ')
	if d.SessionID != "" {
		paint(ansiDim, d.SessionID)
	}
	dst = append(append(dst, ' '), d.Excerpt...)
	return append(dst, '\n')
}

func classColor(c Class) string {
	switch c {
	case Milestone:
		return ansiMilestone
	case Finding:
		return ansiFinding
	}
	return ansiActivity
}

// isFailure picks the events a terminal shows in red: errors, and session
// ends other than end_turn.
func isFailure(ev Event) bool {
	switch ev.Name() {
	case sdk.EventError:
		return true
	case sdk.EventSessionEnd:
		return ev.str("stop_reason") != "end_turn"
	}
	return false
}
