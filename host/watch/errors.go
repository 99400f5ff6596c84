package watch

import (
	"errors"
	"fmt"
)

var (
	// ErrMalformed: a log line is not one JSON object. The fault is the
	// log's writer (or a truncated file); watch skips the line.
	ErrMalformed = errors.New("malformed event line")
	// ErrCursorAhead: the cursor file points past the end of the log, so it
	// was saved for another (or a since-rewritten) log. The fault is the
	// caller's: remove the cursor file or point it at the right log.
	ErrCursorAhead = errors.New("log shorter than cursor")
	// ErrBadCursor: the cursor file holds something other than a decimal
	// byte offset.
	ErrBadCursor = errors.New("cursor file is not a byte offset")
	// ErrTruncated: the log shrank below what was already read while
	// following it; it was rewritten, not appended to.
	ErrTruncated = errors.New("log truncated while following")
	// ErrCursorPipe: --since-cursor was given with a pipe; a pipe has no
	// offsets to come back to. The fault is the caller's.
	ErrCursorPipe = errors.New("a cursor needs a log file")
)

// CursorAheadError is [ErrCursorAhead] with the contract's exact text (docs/watch.md):
// "log <p> shorter than cursor (offset N > size M) (cursor <c>)".
type CursorAheadError struct {
	Log, Cursor  string
	Offset, Size int64
}

func (e *CursorAheadError) Error() string {
	return fmt.Sprintf("log %s shorter than cursor (offset %d > size %d) (cursor %s)", e.Log, e.Offset, e.Size, e.Cursor)
}

// Unwrap makes errors.Is(err, ErrCursorAhead) hold.
func (e *CursorAheadError) Unwrap() error { return ErrCursorAhead }
