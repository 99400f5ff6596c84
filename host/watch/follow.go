package watch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// DefaultPollInterval is the follow-mode sleep between two looks at the log
// (contract §1.5: --poll-interval 250ms).
const DefaultPollInterval = 250 * time.Millisecond

// DefaultCursorEvery is how many events apart follow mode saves the cursor
// (contract §1.5: every 10 events).
const DefaultCursorEvery = 10

// Config is one `avenor watch`. The zero value reads the whole log once and
// prints plain lines.
type Config struct {
	// Follow keeps polling after the end of the log and returns after the
	// first session.end, or when ctx ends. It also waits for a log that does
	// not exist yet. Default false: read to the end once.
	Follow bool
	// Printer says how events are printed. Zero value: plain lines.
	Printer Printer
	// PollInterval is the follow-mode sleep. Zero means DefaultPollInterval.
	PollInterval time.Duration
	// CursorPath, when set, is read before starting (reading starts at the
	// saved offset; a missing file means 0) and rewritten on return and, in
	// follow mode, every CursorEvery events. Default "": no cursor.
	CursorPath string
	// CursorEvery is the follow-mode cursor period in events. Zero means
	// DefaultCursorEvery.
	CursorEvery int
	// MaxLineBytes bounds a line; longer lines are skipped with a note on
	// Stderr. Zero means DefaultMaxLineBytes.
	MaxLineBytes int
	// Stderr gets a note for each skipped over-long line. Nil discards them.
	Stderr io.Writer
	// Sleep waits d or until ctx ends (then it returns ctx's error). Nil
	// means a real timer; tests inject their own to drive the follower.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (c Config) withDefaults() Config {
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.CursorEvery <= 0 {
		c.CursorEvery = DefaultCursorEvery
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
	return c
}

// Result says what one [Run] did.
type Result struct {
	// Events is the number of events printed.
	Events int
	// Malformed is the number of non-blank lines that were not one JSON
	// object; they print nothing.
	Malformed int
	// TooLong is the number of lines skipped for exceeding MaxLineBytes.
	TooLong int
	// Offset is where the next watch should start: just past the last line
	// read and written out. It is what the cursor file holds.
	Offset int64
	// SessionEnded says a session.end stopped a follow.
	SessionEnded bool
}

// errStopped: ctx ended while waiting; a clean stop, not a failure.
var errStopped = errors.New("stopped")

// Run prints the events of the log at path to out, per cfg, and saves the
// cursor. It returns nil when the log was read to its end (or, following,
// at session.end or when ctx ends), and an error when the log or the cursor
// cannot be read or written, when the cursor points past the end of the log
// ([CursorAheadError], the cursor file is left alone), or when a followed
// log shrinks ([ErrTruncated]).
func Run(ctx context.Context, path string, out io.Writer, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	var start int64
	if cfg.CursorPath != "" {
		off, _, err := ReadCursor(cfg.CursorPath)
		if err != nil {
			return Result{}, err
		}
		start = off
	}
	res := Result{Offset: start}
	f, err := openLog(ctx, path, cfg)
	if errors.Is(err, errStopped) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return res, err
	}
	if start > fi.Size() {
		return res, &CursorAheadError{Log: path, Cursor: cfg.CursorPath, Offset: start, Size: fi.Size()}
	}

	w := &watcher{cfg: cfg, path: path, f: f, res: &res, out: bufio.NewWriterSize(out, 64<<10)}
	w.lines = newLineReader(f, start, cfg.MaxLineBytes, w.skipped)
	err = w.loop(ctx)
	if errors.Is(err, errStopped) {
		err = nil
	}
	if ferr := w.flush(); ferr != nil && err == nil {
		err = ferr
	}
	if cfg.CursorPath != "" {
		if cerr := WriteCursor(cfg.CursorPath, res.Offset); cerr != nil && err == nil {
			err = cerr
		}
	}
	return res, err
}

// openLog opens the log; in follow mode it waits for a log that does not
// exist yet (the run may not have created it).
func openLog(ctx context.Context, path string, cfg Config) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if err == nil || !cfg.Follow || !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
		if cfg.Sleep(ctx, cfg.PollInterval) != nil {
			return nil, errStopped
		}
	}
}

// watcher is the state of one Run over an open log.
type watcher struct {
	cfg     Config
	path    string
	f       *os.File
	lines   *lineReader
	out     *bufio.Writer
	res     *Result
	scratch []byte
}

// ctxCheckEvery is how many lines pass between two looks at ctx while a
// long log is being read.
const ctxCheckEvery = 256

func (w *watcher) loop(ctx context.Context) error {
	for n := 0; ; {
		line, err := w.lines.Next()
		if err == io.EOF {
			if err := w.flush(); err != nil {
				return err
			}
			if !w.cfg.Follow {
				return nil
			}
			if err := w.checkSize(); err != nil {
				return err
			}
			if w.cfg.Sleep(ctx, w.cfg.PollInterval) != nil {
				return errStopped
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading log %s: %w", w.path, err)
		}
		if n++; n%ctxCheckEvery == 0 && ctx.Err() != nil {
			return errStopped
		}
		if err := w.event(line); err != nil {
			return err
		}
	}
}

// checkSize fails when the followed log got shorter than what was read: it
// was rewritten, and offsets into it mean nothing any more.
func (w *watcher) checkSize() error {
	fi, err := w.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() < w.lines.end() {
		return fmt.Errorf("%w: log %s is %d bytes, %d were read", ErrTruncated, w.path, fi.Size(), w.lines.end())
	}
	return nil
}

// event prints one line's event, if it has one. Following, it returns
// errStopped after session.end, and saves the cursor every CursorEvery
// events.
func (w *watcher) event(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ev, err := ParseLine(line)
	if err != nil {
		w.res.Malformed++
		return nil
	}
	name := ev.Name()
	if name == "" {
		return nil
	}
	w.scratch, err = w.cfg.Printer.Append(w.scratch[:0], line, ev)
	if err != nil {
		return err
	}
	if _, err := w.out.Write(w.scratch); err != nil {
		return err
	}
	w.res.Events++
	if !w.cfg.Follow {
		return nil
	}
	if name == evSessionEnd {
		w.res.SessionEnded = true
		return errStopped
	}
	if w.cfg.CursorPath != "" && w.res.Events%w.cfg.CursorEvery == 0 {
		if err := w.flush(); err != nil {
			return err
		}
		return WriteCursor(w.cfg.CursorPath, w.res.Offset)
	}
	return nil
}

// flush writes out what is buffered; only then does the cursor move past it.
func (w *watcher) flush() error {
	if err := w.out.Flush(); err != nil {
		return err
	}
	w.res.Offset = w.lines.Offset()
	return nil
}

func (w *watcher) skipped(offset, length int64) {
	w.res.TooLong++
	fmt.Fprintf(w.cfg.Stderr, "avenor watch: skipped the line at byte %d of %s: %d bytes, over the %d-byte limit\n",
		offset, w.path, length, w.cfg.MaxLineBytes)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
