package watch

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLineBytes bounds one log line; a longer line is skipped with a
// note (a final_output of tens of MiB still fits).
const DefaultMaxLineBytes = 64 << 20

const readChunk = 64 << 10

// lineReader hands out the complete lines of a growing file from a byte
// offset. A last line without its newline stays buffered until the newline
// arrives; a line longer than max is dropped as it streams past (never held
// whole) and reported to onSkip.
type lineReader struct {
	r      io.ReaderAt
	max    int
	onSkip func(offset, length int64)

	off      int64  // file offset of buf[start]: just past the last line handed out
	buf      []byte // bytes read; buf[start:] is not handed out yet
	start    int    // first byte of buf not handed out
	scanned  int    // buf[start:scanned] holds no newline
	skipping bool   // dropping an over-long line until its newline
	skipFrom int64  // where that line started
	chunk    []byte
}

func newLineReader(r io.ReaderAt, offset int64, max int, onSkip func(offset, length int64)) *lineReader {
	return &lineReader{r: r, max: max, onSkip: onSkip, off: offset, chunk: make([]byte, readChunk)}
}

// Offset is where the next line starts: just past the last line handed out
// or skipped. It never points inside a line, also while one is being
// skipped.
func (lr *lineReader) Offset() int64 {
	if lr.skipping {
		return lr.skipFrom
	}
	return lr.off
}

// end is how far the file has been read.
func (lr *lineReader) end() int64 { return lr.off + int64(len(lr.buf)-lr.start) }

// Next returns the next complete line without its newline (and a trailing
// "\r", if any). The slice is valid until the next call. At the current end
// of the file it returns io.EOF; calling again later picks up what was
// appended meanwhile.
func (lr *lineReader) Next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.scanned:], '\n'); i >= 0 {
			n := lr.scanned + i - lr.start // line length
			line := lr.buf[lr.start : lr.start+n]
			lr.consume(n + 1)
			if lr.skipping {
				lr.skipping = false
				lr.onSkip(lr.skipFrom, lr.off-lr.skipFrom-1)
				continue
			}
			if len(line) > lr.max {
				lr.onSkip(lr.off-int64(n)-1, int64(n))
				continue
			}
			return bytes.TrimSuffix(line, []byte{'\r'}), nil
		}
		lr.scanned = len(lr.buf)
		if !lr.skipping && len(lr.buf)-lr.start > lr.max {
			lr.skipping, lr.skipFrom = true, lr.off
		}
		if lr.skipping {
			// Drop what streamed past; keep reading for the newline.
			lr.consume(len(lr.buf) - lr.start)
		}
		if err := lr.fill(); err != nil {
			return nil, err
		}
	}
}

// consume hands out the next n bytes of buf: a line and its newline, or
// part of a skipped line.
func (lr *lineReader) consume(n int) {
	lr.off += int64(n)
	lr.start += n
	if lr.scanned < lr.start {
		lr.scanned = lr.start
	}
}

// fill appends the next chunk of the file to buf, first moving what is not
// handed out yet to the front; io.EOF when nothing new.
func (lr *lineReader) fill() error {
	if lr.start > 0 {
		rest := copy(lr.buf, lr.buf[lr.start:])
		lr.buf = lr.buf[:rest]
		lr.scanned -= lr.start
		lr.start = 0
	}
	n, err := lr.r.ReadAt(lr.chunk, lr.end())
	lr.buf = append(lr.buf, lr.chunk[:n]...)
	switch {
	case n > 0:
		return nil
	case err == nil, errors.Is(err, io.EOF):
		return io.EOF
	}
	return err
}
