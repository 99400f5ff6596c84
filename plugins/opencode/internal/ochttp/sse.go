package ochttp

import (
	"bytes"
	"errors"
	"io"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// Bounds of the SSE parser. OpenCode sends one JSON event per data line; a
// tool part can carry a whole file, so the bound is generous, and beyond it
// the line is dropped, not buffered.
const (
	maxSSELineBytes  = 16 << 20
	maxSSEEventBytes = 32 << 20
)

// sseReader reads the data of server-sent events: the "data:" lines of one
// event joined with '\n', dispatched on a blank line. Comments, "event:",
// "id:" and "retry:" fields are ignored (OpenCode puts the type inside the
// JSON). An over-long line or event is skipped and reported through
// dropped.
type sseReader struct {
	lr      *agentproc.LineReader
	data    []byte
	has     bool
	skip    bool // the event in progress went past a bound
	dropped int
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{lr: agentproc.NewLineReader(r, maxSSELineBytes)}
}

// Next returns the data of the next event. At the end of the stream it
// returns io.EOF (an event not closed by a blank line is dropped, as the
// SSE spec says); other errors are the transport's.
func (s *sseReader) Next() ([]byte, error) {
	for {
		line, err := s.lr.Next()
		if err != nil {
			var tl *agentproc.LineTooLongError
			if errors.As(err, &tl) {
				s.dropped++
				s.data, s.has, s.skip = s.data[:0], false, true
				continue
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.skip {
				s.skip = false
				continue
			}
			if !s.has {
				continue
			}
			out := append([]byte(nil), s.data...)
			s.data, s.has = s.data[:0], false
			return out, nil
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if s.skip || string(field) != "data" {
			continue // a comment or a field we do not use
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		if s.has {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > maxSSEEventBytes {
			s.dropped++
			s.data, s.has, s.skip = s.data[:0], false, true
			continue
		}
		s.data = append(s.data, value...)
		s.has = true
	}
}
