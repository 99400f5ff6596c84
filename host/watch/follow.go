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
// (docs/watch.md: --poll-interval 250ms).
const DefaultPollInterval = 250 * time.Millisecond

// DefaultCursorEvery is how many events apart follow mode saves the cursor
// (docs/watch.md: every 10 events).
const DefaultCursorEvery = 10

// Config is one `avenor watch`. The zero value reads the whole log once and
// prints plain lines.
type Config struct {
	// Follow keeps polling after the end of the log until the run that
	// writes it is over (see [Run]), or ctx ends. It also waits for a log
	// that does not exist yet. Default false: read to the end once (a pipe:
	// until its writer closes it).
	Follow bool
	// SentinelPath, when set while following, is the run's sentinel file
	// (docs/run.md#sentinel): once it holds this run's sentinel the log is complete,
	// and Run returns after reading it to its end. It then decides alone:
	// no settle time applies. Default "": no sentinel.
	SentinelPath string
	// Settle is how long a follow waits with nothing new after a clean or
	// cancelled session.end outside a loop or team (more turns may follow)
	// before it returns. Zero means DefaultSettle.
	Settle time.Duration
	// RetrySettle is the same wait after a retryable failure before the
	// last attempt. Zero means DefaultRetrySettle.
	RetrySettle time.Duration
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
	c.Printer = NewPrinter(c.Printer)
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
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.RetrySettle <= 0 {
		c.RetrySettle = DefaultRetrySettle
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
	// Ended says why a follow stopped, "" when it did not; a pipe read
	// without Follow ends with EndClosed.
	Ended End
}

// errStopped: ctx ended while waiting; a clean stop, not a failure.
var errStopped = errors.New("stopped")

// Run prints the events of the log at path to out, per cfg, and saves the
// cursor. path [Stdin] ("-") reads standard input; a pipe is read until its
// writer closes it, and cannot have a cursor ([ErrCursorPipe]).
//
// Following, Run returns when the run that writes the log is over (issue
// 17), whichever comes first:
//
//   - the avenor.loop.end or avenor.team.end that closes the run; inside a
//     loop or team a phase's session.end ends nothing;
//   - a session.end nothing can follow: a failure that is not retried, or
//     a retryable one after the avenor.retry of the last attempt;
//   - with Config.SentinelPath, the run's sentinel appearing (then only
//     that, and the two above, end it);
//   - without it, Config.Settle (RetrySettle after a retryable failure)
//     with nothing new after a session.end that another turn or attempt
//     could follow: avenor.turn.start, avenor.retry or session.start
//     arriving in time means the run goes on;
//   - a pipe's writer closing it, or ctx ending.
//
// It returns nil at those ends (and at the end of the log without Follow),
// and an error when the log or the cursor cannot be read or written, when
// the cursor points past the end of the log ([CursorAheadError], the cursor
// file is left alone), or when a followed log shrinks ([ErrTruncated]).
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
	w := &watcher{cfg: cfg, path: path, f: f, res: &res, out: bufio.NewWriterSize(out, 64<<10)}
	var src io.ReaderAt = f
	if isStream(fi.Mode()) {
		if cfg.CursorPath != "" {
			return res, fmt.Errorf("%w: %s is a pipe, not a log file (drop --since-cursor, or watch the log file itself)", ErrCursorPipe, path)
		}
		if w.stream, err = newStreamSource(f); err != nil {
			return res, fmt.Errorf("reading %s: %w", path, err)
		}
		src = w.stream
	} else if start > fi.Size() {
		return res, &CursorAheadError{Log: path, Cursor: cfg.CursorPath, Offset: start, Size: fi.Size()}
	}
	w.lines = newLineReader(src, start, cfg.MaxLineBytes, w.skipped)
	err = w.loop(ctx)
	if errors.Is(err, errStopped) {
		err = nil
	}
	if rest := w.cfg.Printer.Finish(nil); len(rest) > 0 {
		if _, werr := w.out.Write(rest); werr != nil && err == nil {
			err = werr
		}
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
	if path == Stdin {
		f, err := openPath(stdinPath)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return f, nil
	}
	for {
		f, err := openPath(path)
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
	// stream is the pipe being read; nil for a file.
	stream *streamSource
	run    runTracker
	// idle is how long the follow has found nothing new since the last
	// line (counted in poll intervals).
	idle time.Duration
	// sentinelSeen: the sentinel was found at the last end of the log; one
	// more read to the end and the follow is over.
	sentinelSeen bool
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
			if end, again, err := w.atEnd(); err != nil || end != "" {
				w.res.Ended = end
				return err
			} else if again {
				continue
			}
			if w.cfg.Sleep(ctx, w.cfg.PollInterval) != nil {
				return errStopped
			}
			w.idle += w.cfg.PollInterval
			continue
		}
		if err != nil {
			return fmt.Errorf("reading log %s: %w", w.path, err)
		}
		w.idle = 0
		if n++; n%ctxCheckEvery == 0 && ctx.Err() != nil {
			return errStopped
		}
		if err := w.event(line); err != nil {
			return err
		}
	}
}

// atEnd decides, at the current end of the log, whether the watch is over:
// end is why (io.EOF's caller returns), again asks for one more read to the
// end right away (the sentinel just appeared: lines written before it may
// have arrived since the last read). Neither: wait a poll interval.
func (w *watcher) atEnd() (end End, again bool, err error) {
	if w.stream != nil && w.stream.closed {
		return EndClosed, false, nil
	}
	if !w.cfg.Follow {
		if w.stream != nil {
			return "", false, nil // a pipe's end is its writer closing it
		}
		return "", false, errStopped // a file read once: done, cleanly
	}
	if w.stream == nil {
		if err := w.checkSize(); err != nil {
			return "", false, err
		}
	}
	if w.cfg.SentinelPath != "" {
		if w.sentinelSeen {
			return EndSentinel, false, nil
		}
		if w.run.sentinelWritten(w.cfg.SentinelPath) {
			w.sentinelSeen = true
			return "", true, nil
		}
		return "", false, nil
	}
	if w.run.settling && w.idle >= w.run.settle(w.cfg) {
		return EndSettled, false, nil
	}
	return "", false, nil
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
// errStopped when the event ends the run (see Run), and saves the cursor
// every CursorEvery events.
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
	if end, over := w.run.observe(ev); over {
		w.res.Ended = end
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
