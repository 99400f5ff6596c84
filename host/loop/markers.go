package loop

import (
	"regexp"
	"strings"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Directive is what a loop marker asks for; a larger value is more severe
// (docs/loop.md#markers: abort > exit > continue).
type Directive int

// Directives of loop markers.
const (
	None Directive = iota
	Continue
	Exit
	Abort
)

func (d Directive) String() string {
	switch d {
	case Continue:
		return "continue"
	case Exit:
		return "exit"
	case Abort:
		return "abort"
	}
	return "none"
}

// Marker is one loop marker: its directive and trimmed label.
type Marker struct {
	Directive Directive
	Label     string
}

// The marker syntaxes of docs/loop.md#markers. Each must be the whole line.
var (
	legacyMarker    = regexp.MustCompile(`(?i)^\s*\[loop:\s*(\w+)(?:\s*\|\s*([^\]]*))?\]\s*$`)
	canonicalMarker = regexp.MustCompile(`(?i)^\s*<\|workflow:\s*(\w+)\s*(?:\|\s*(.*))?\|>\s*$`)
	skipMarker      = regexp.MustCompile(`(?i)^\s*<\|team:\s*skip\s*\|\s*(.*?)\s*\|>\s*$`)
)

// ParseMarker reads one line as a loop marker; unknown directives and
// anything but a whole-line marker are not markers.
func ParseMarker(line string) (Marker, bool) {
	m := legacyMarker.FindStringSubmatch(line)
	if m == nil {
		m = canonicalMarker.FindStringSubmatch(line)
	}
	if m == nil {
		return Marker{}, false
	}
	var d Directive
	switch strings.ToLower(m[1]) {
	case "continue":
		d = Continue
	case "exit":
		d = Exit
	case "abort":
		d = Abort
	default:
		return Marker{}, false
	}
	return Marker{Directive: d, Label: strings.TrimSpace(m[2])}, true
}

// ParseSkip reads one line as a team skip marker and returns the member's
// name, trimmed.
func ParseSkip(line string) (string, bool) {
	m := skipMarker.FindStringSubmatch(line)
	if m == nil || m[1] == "" {
		return "", false
	}
	return m[1], true
}

// maxLine bounds a buffered partial line; a longer line is no marker and is
// dropped up to its end.
const maxLine = 64 << 10

// Scanner finds the markers of one phase in its events: the text of
// agent.message_chunk and agent.thought_chunk, each stream buffered into
// lines across chunks. A line counts only outside ``` / ~~~ fences and
// outside block quotes (lines starting with >); tool output, user text and
// anything that is not a whole line never counts. It is safe for concurrent
// use.
type Scanner struct {
	mu      sync.Mutex
	streams map[string]*lineState
	best    Marker
	skips   []string
}

// lineState is one text stream's partial line and fence.
type lineState struct {
	buf       strings.Builder
	overflow  bool
	fence     byte // '`' or '~' inside a fence, else 0
	fenceLen  int
	messageID string
}

// Observe feeds one event of the phase.
func (s *Scanner) Observe(ev event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type() {
	case event.TypeMessageChunk:
		s.chunk("message", ev)
	case sdk.EventThoughtChunk:
		s.chunk("thought", ev)
	case event.TypeToolCall, sdk.EventToolCallUpdate, event.TypePermissionRequest,
		event.TypeTurnStart, event.TypeSessionStart, event.TypeSessionEnd:
		// A message ends where a tool, a permission, or a turn begins: text
		// before and after never joins into one line, and a fence left open
		// does not hide the rest of the phase.
		for _, st := range s.streams {
			s.endMessage(st)
		}
	}
}

// Feed adds text to a stream, as a chunk would.
func (s *Scanner) Feed(stream, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feed(s.stream(stream), text)
}

// Result ends every partial line and returns the most severe marker (the
// first of that severity) and the skip markers' names, in order.
func (s *Scanner) Result() (Marker, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.streams {
		s.endMessage(st)
	}
	return s.best, append([]string(nil), s.skips...)
}

func (s *Scanner) stream(name string) *lineState {
	if s.streams == nil {
		s.streams = map[string]*lineState{}
	}
	st := s.streams[name]
	if st == nil {
		st = &lineState{}
		s.streams[name] = st
	}
	return st
}

func (s *Scanner) chunk(stream string, ev event.Event) {
	st := s.stream(stream)
	if id, _ := ev["messageId"].(string); id != "" {
		if st.messageID != "" && id != st.messageID {
			s.endMessage(st)
		}
		st.messageID = id
	}
	s.feed(st, chunkText(ev))
}

// chunkText is a chunk's text: content.text, or delta for backends that
// send one.
func chunkText(ev event.Event) string {
	switch c := ev["content"].(type) {
	case map[string]any:
		if t, ok := c["text"].(string); ok {
			return t
		}
	case string:
		return c
	}
	if d, ok := ev["delta"].(string); ok {
		return d
	}
	return ""
}

func (s *Scanner) feed(st *lineState, text string) {
	for text != "" {
		i := strings.IndexByte(text, '\n')
		part := text
		if i >= 0 {
			part = text[:i]
		}
		if !st.overflow {
			if st.buf.Len()+len(part) > maxLine {
				st.overflow = true
				st.buf.Reset()
			} else {
				st.buf.WriteString(part)
			}
		}
		if i < 0 {
			return
		}
		s.line(st)
		text = text[i+1:]
	}
}

// endMessage ends the stream's partial line and any open fence.
func (s *Scanner) endMessage(st *lineState) {
	if st.buf.Len() > 0 || st.overflow {
		s.line(st)
	}
	st.fence, st.fenceLen, st.messageID = 0, 0, ""
}

// line takes the stream's complete line.
func (s *Scanner) line(st *lineState) {
	line, overflow := strings.TrimSuffix(st.buf.String(), "\r"), st.overflow
	st.buf.Reset()
	st.overflow = false
	if overflow {
		return
	}
	if st.fenceLine(line) || st.fence != 0 {
		return
	}
	if strings.HasPrefix(strings.TrimLeft(line, " \t"), ">") {
		return // quoted, not said
	}
	if m, ok := ParseMarker(line); ok {
		if m.Directive > s.best.Directive {
			s.best = m
		}
		return
	}
	if name, ok := ParseSkip(line); ok {
		s.skips = append(s.skips, name)
	}
}

// fenceLine opens or closes a fence (CommonMark: three or more ` or ~; the
// closing run is the same character, at least as long, with nothing after
// it) and reports whether line was a fence line.
func (st *lineState) fenceLine(line string) bool {
	t := strings.TrimLeft(line, " \t")
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return false
	}
	c := t[0]
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return false
	}
	rest := t[n:]
	if st.fence == 0 {
		if c == '`' && strings.IndexByte(rest, '`') >= 0 {
			return false // an inline code span, not a fence
		}
		st.fence, st.fenceLen = c, n
		return true
	}
	if c == st.fence && n >= st.fenceLen && strings.TrimSpace(rest) == "" {
		st.fence, st.fenceLen = 0, 0
		return true
	}
	return false
}
