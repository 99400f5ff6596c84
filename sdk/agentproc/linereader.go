package agentproc

import (
	"bufio"
	"errors"
	"io"
)

// LineReader frames a byte stream into '\n'-terminated lines with a bound on
// line length. Unlike bufio.Scanner it survives an over-long line: the line is
// read through and discarded in fixed-size chunks, reported once as a
// *LineTooLongError, and reading continues with the next line. Whatever the
// input, it holds at most max+1 bytes plus one read chunk.
//
// A LineReader is not safe for concurrent use.
type LineReader struct {
	br  *bufio.Reader
	max int
	buf []byte // the line being assembled when it spans several chunks
	err error  // sticky: once the source fails or ends, Next keeps saying so
}

// NewLineReader returns a LineReader over r that accepts lines of up to max
// bytes; max <= 0 means DefaultMaxLineBytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return newLineReaderSize(r, max, lineChunkBytes)
}

// newLineReaderSize lets tests use a tiny chunk so that lines spanning chunks
// are exercised without megabytes of input.
func newLineReaderSize(r io.Reader, max, chunk int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	return &LineReader{br: bufio.NewReaderSize(r, chunk), max: max}
}

// Next returns the next line without its '\n' and without one trailing '\r'.
// The slice is valid only until the next call. A final line with no '\n' is
// returned as a line. For a line longer than the limit Next returns a
// *LineTooLongError (after discarding the line); call Next again for the
// following line. At the end of input Next returns io.EOF; any other read
// error is returned as is, and the partial line is dropped.
func (lr *LineReader) Next() ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	if cap(lr.buf) > retainLineBytes {
		lr.buf = nil
	}
	lr.buf = lr.buf[:0]

	var (
		size    int64 // bytes of the line so far, terminator excluded
		lastCR  bool  // the last byte seen was '\r'
		tooLong bool  // the line is past the limit; bytes are being discarded
	)
	for first := true; ; first = false {
		frag, err := lr.br.ReadSlice('\n')
		complete := err == nil
		if complete {
			frag = frag[:len(frag)-1]
			if first {
				// The common case: the whole line is in the read buffer, so
				// return it without copying.
				return lr.finish(frag, int64(len(frag)))
			}
		}
		switch {
		case complete, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			lr.err = io.EOF
			if first && len(frag) == 0 {
				return nil, io.EOF
			}
		default:
			lr.err = err
			return nil, err
		}

		size += int64(len(frag))
		if len(frag) > 0 {
			lastCR = frag[len(frag)-1] == '\r'
		}
		// Keep one byte beyond the limit: it may be the '\r' of a CRLF line
		// whose content is exactly max bytes.
		if !tooLong && len(lr.buf)+len(frag) > lr.max+1 {
			tooLong = true
			lr.buf = lr.buf[:0]
		}
		if !tooLong {
			lr.appendBounded(frag)
		}

		if complete || lr.err != nil {
			if tooLong {
				if lastCR {
					size--
				}
				return nil, &LineTooLongError{Limit: int64(lr.max), Size: size}
			}
			return lr.finish(lr.buf, size)
		}
	}
}

// finish strips a trailing '\r' and applies the bound to a whole line.
func (lr *LineReader) finish(line []byte, size int64) ([]byte, error) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
		size--
	}
	if len(line) > lr.max {
		return nil, &LineTooLongError{Limit: int64(lr.max), Size: size}
	}
	return line, nil
}

// appendBounded appends to buf, growing it by doubling but never past max+1,
// so a line at the limit costs about twice the limit in total allocation
// rather than the five-fold of append's gentler growth for large slices.
func (lr *LineReader) appendBounded(frag []byte) {
	need := len(lr.buf) + len(frag)
	if need > cap(lr.buf) {
		grown := min(max(2*cap(lr.buf), need, 4096), lr.max+1)
		buf := make([]byte, len(lr.buf), grown)
		copy(buf, lr.buf)
		lr.buf = buf
	}
	lr.buf = append(lr.buf, frag...)
}
