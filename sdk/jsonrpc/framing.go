package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// LineSource yields an agent's stdout one line at a time, without the
// terminator. *agentproc.LineReader is one; ProcessLines adapts a running
// agentproc.Process. Next returns a *agentproc.LineTooLongError for a line
// past the bound (the source goes on after it), and io.EOF at the end.
type LineSource interface {
	Next() ([]byte, error)
}

// ProcessLines is the LineSource of an agentproc.Process's stdout.
func ProcessLines(lines <-chan agentproc.Line) LineSource { return chanSource(lines) }

type chanSource <-chan agentproc.Line

func (c chanSource) Next() ([]byte, error) {
	l, ok := <-c
	if !ok {
		return nil, io.EOF
	}
	return l.Data, l.Err
}

// FrameError is a frame that could not be used: a line that is not JSON,
// an over-long line, a malformed Content-Length header. Reading goes on with
// the next frame.
type FrameError struct {
	Err   error
	Frame string // the start of the offending bytes, for diagnostics
}

func (e *FrameError) Error() string {
	if e.Frame == "" {
		return "acp: unusable frame: " + e.Err.Error()
	}
	return fmt.Sprintf("acp: unusable frame %q: %v", e.Frame, e.Err)
}

func (e *FrameError) Unwrap() error { return e.Err }

// framer turns lines into frames. A line is one NDJSON message, except that
// a "Content-Length: N" line starts an LSP-style framed message: header
// lines up to an empty line, then a body of N bytes, which may span lines
// (newlines inside it count as one byte each) or end in the middle of one
// (the rest of that line is read as the next line). Because the line source
// drops a '\r' before each '\n', a body whose lines ended in CRLF is a few
// bytes short of N; it is accepted as soon as it is complete JSON.
type framer struct {
	max   int
	state int // stateLine, stateHeaders, stateBody
	want  int // body length announced by Content-Length
	body  []byte
	skip  bool // the body is over max: count its bytes, keep none
	seen  int  // body bytes consumed while skipping
}

const (
	stateLine = iota
	stateHeaders
	stateBody
)

const contentLength = "content-length:"

// push consumes one line and returns the frames it completes. The frames
// are the caller's to keep. An error reports a frame that was dropped;
// frames returned with it are still good.
func (f *framer) push(line []byte) (frames [][]byte, err error) {
	note := func(e error) {
		if err == nil {
			err = e
		}
	}
	for rest, more := line, true; more; {
		line, more = rest, false
		switch f.state {
		case stateLine:
			trimmed := bytes.TrimSpace(line)
			switch {
			case len(trimmed) == 0:
			case hasPrefixFold(trimmed, contentLength):
				n, perr := strconv.Atoi(strings.TrimSpace(string(trimmed[len(contentLength):])))
				if perr != nil || n < 0 {
					note(&FrameError{Err: errors.New("malformed Content-Length header"), Frame: clip(trimmed)})
					continue
				}
				f.state, f.want, f.body, f.skip, f.seen = stateHeaders, n, nil, n > f.max, 0
			default:
				frames = append(frames, bytes.Clone(trimmed))
			}
		case stateHeaders:
			trimmed := bytes.TrimSpace(line)
			switch {
			case len(trimmed) == 0:
				f.state = stateBody
				if f.want == 0 {
					f.state = stateLine
					note(&FrameError{Err: errors.New("Content-Length 0: empty message")})
				}
			case trimmed[0] == '{':
				// No blank line after the headers: the body starts here.
				f.state = stateBody
				rest, more = line, true
			}
			// Other headers (Content-Type) carry nothing we need.
		case stateBody:
			if f.skip {
				need := f.want - f.seen
				if len(line) >= need {
					f.state = stateLine
					note(&FrameError{Err: fmt.Errorf("Content-Length %d exceeds the %d-byte limit; message discarded", f.want, f.max)})
					if r := line[need:]; len(bytes.TrimSpace(r)) > 0 {
						rest, more = r, true
					}
					continue
				}
				f.seen += len(line) + 1
				continue
			}
			if len(f.body) > 0 {
				f.body = append(f.body, '\n')
			}
			f.body = append(f.body, line...)
			switch {
			case len(f.body) >= f.want:
				frames = append(frames, bytes.Clone(bytes.TrimSpace(f.body[:f.want])))
				if r := f.body[f.want:]; len(bytes.TrimSpace(r)) > 0 {
					rest, more = bytes.Clone(r), true
				}
				f.state, f.body = stateLine, nil
			case json.Valid(f.body):
				frames = append(frames, bytes.TrimSpace(f.body))
				f.state, f.body = stateLine, nil
			}
		}
	}
	return frames, err
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

func clip(b []byte) string { return runtime.Truncate(string(b), 120) }

// Decoder reads JSON-RPC messages from a LineSource.
type Decoder struct {
	src    LineSource
	framer framer
	queue  [][]byte
	err    error // deferred FrameError from the framer
}

// NewDecoder decodes messages from src; maxFrame bounds a Content-Length
// body (lines are bounded by src itself); <= 0 means
// agentproc.DefaultMaxLineBytes.
func NewDecoder(src LineSource, maxFrame int) *Decoder {
	if maxFrame <= 0 {
		maxFrame = agentproc.DefaultMaxLineBytes
	}
	return &Decoder{src: src, framer: framer{max: maxFrame}}
}

// Next returns the next message. A *FrameError is not fatal: call Next
// again. Any other error (io.EOF at the end) is final.
func (d *Decoder) Next() (*Message, error) {
	for {
		if len(d.queue) > 0 {
			frame := d.queue[0]
			d.queue = d.queue[1:]
			return parseFrame(frame)
		}
		if d.err != nil {
			err := d.err
			d.err = nil
			return nil, err
		}
		line, err := d.src.Next()
		if err != nil {
			if errors.Is(err, agentproc.ErrLineTooLong) {
				return nil, &FrameError{Err: err}
			}
			return nil, err
		}
		d.queue, d.err = d.framer.push(line)
	}
}

// parseFrame decodes one frame into a message.
func parseFrame(frame []byte) (*Message, error) {
	if len(frame) == 0 || frame[0] != '{' {
		return nil, &FrameError{Err: errors.New("not a JSON-RPC message"), Frame: clip(frame)}
	}
	var m Message
	if err := json.Unmarshal(frame, &m); err != nil {
		return nil, &FrameError{Err: err, Frame: clip(frame)}
	}
	if m.Method == "" && m.ID == nil {
		return nil, &FrameError{Err: errors.New("neither method nor id"), Frame: clip(frame)}
	}
	if m.Method == "" && m.Result == nil && m.Error == nil {
		// A response with "result": null decodes to Result nil; keep it a
		// response with a null result.
		m.Result = json.RawMessage("null")
	}
	return &m, nil
}

// encode writes m as one NDJSON line.
func encode(m *Message) ([]byte, error) {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
