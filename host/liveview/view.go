package liveview

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Mode is how a view renders.
type Mode int

// Modes of a view (--progress).
const (
	// Off renders nothing: the harness case.
	Off Mode = iota
	// Plain writes one line per event, no colour, no cursor movement.
	Plain
	// TTY streams text in place with a status line, coloured unless
	// NO_COLOR is set.
	TTY
)

func (m Mode) String() string {
	switch m {
	case Plain:
		return "plain"
	case TTY:
		return "tty"
	}
	return "off"
}

// Choose is the mode of a run: progress is --progress ("" when not given:
// TTY when stderr is a terminal, else Off), quiet is --quiet (always Off).
func Choose(progress string, quiet, stderrTerminal bool) (Mode, error) {
	switch progress {
	case "":
		if quiet || !stderrTerminal {
			return Off, nil
		}
		return TTY, nil
	case "off":
		return Off, nil
	case "plain", "tty":
		if quiet {
			return Off, fmt.Errorf("--quiet and --progress=%s are mutually exclusive", progress)
		}
		if progress == "plain" {
			return Plain, nil
		}
		return TTY, nil
	}
	return Off, fmt.Errorf("--progress %q: want plain, tty or off", progress)
}

// Bounds of a view.
const (
	// DefaultQueue is the view's subscription queue: a view further behind
	// than this loses its oldest events, with a note, and never slows the run.
	DefaultQueue = 1024
	// FinishBudget is how long Finish waits for the view to catch up with
	// the stream before it prints the summary anyway.
	FinishBudget = 2 * time.Second
	// StatusTick is how often the TTY status line's clock is redrawn.
	StatusTick = time.Second
	// maxTools bounds the tool titles remembered for their updates.
	maxTools = 256
	// StallAfter is how long a turn may go without a word from the runtime
	// before the status line says what it is waiting for.
	StallAfter = 10 * time.Second
)

// Options configures a view. Out is required; the rest have defaults.
type Options struct {
	// Out receives the view, normally stderr.
	Out io.Writer
	// Mode: Plain or TTY (Off makes Start return a view that renders
	// nothing and whose Writer is Out).
	Mode Mode
	// Color enables ANSI colour in TTY mode (the caller honours NO_COLOR).
	Color bool
	// Queue is the subscription's capacity; <= 0: DefaultQueue.
	Queue int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Tick is the status line's refresh period; <= 0: StatusTick.
	Tick time.Duration
	// PermBase and ControlSocket, when set, are the run's permission file
	// base and control socket: a permission request shows the commands
	// that answer it through them.
	PermBase, ControlSocket string
}

// Summary is what the caller knows once the run ended; the view adds the
// duration and the usage it saw.
type Summary struct {
	StopReason sdk.StopReason
	ExitCode   int
	SessionID  string
	// EventLog and Sentinel are the paths given (--on-event, --sentinel-file).
	EventLog, Sentinel string
}

// View is a running live view. Its methods are safe for concurrent use.
type View struct {
	o     Options
	sub   *event.Subscription
	start time.Time

	seen     atomic.Int64  // highest seq rendered
	progress chan struct{} // capacity 1: "seen moved"
	done     chan struct{} // closed when the reader returns
	stopTick chan struct{}
	tickDone chan struct{}
	attach   sync.Once
	finished sync.Once
	w        *event.Writer // set by Attach

	mu        sync.Mutex
	midLine   bool            // the cursor is after streamed text, not at column 0
	statusOn  bool            // a status line is on screen (TTY)
	plainText strings.Builder // Plain: text waiting for its newline
	phase     string
	label     string
	tokens    map[string]any
	stop      string
	tools     map[string]string // tool id → title
	toolOrder []string
	spent     map[string]any // the session.end usages summed: every attempt's, phase's and iteration's
	ends      int            // session.end events seen
	backend   string         // from session.start, to say who is being waited for
	turnStart time.Time      // the turn in flight began (or the view started)
	lastEvent time.Time
	replied   bool // the runtime said something (text, thought, tool, permission) this turn
	awaiting  bool // a permission request waits for its answer (the view says who answers it)
	inline    bool // AnswerInline: requests nobody answers are asked here
	asking    bool // a question waits for the person's line
}

// New returns a view that renders nothing until Attach; its Writer works
// at once (text written before Attach passes straight through).
func New(o Options) *View {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Tick <= 0 {
		o.Tick = StatusTick
	}
	now := o.Now()
	return &View{o: o, start: now, turnStart: now, lastEvent: now, progress: make(chan struct{}, 1), done: make(chan struct{}),
		stopTick: make(chan struct{}), tickDone: make(chan struct{}), tools: map[string]string{}}
}

// Start is New and Attach.
func Start(w *event.Writer, o Options) *View {
	v := New(o)
	v.Attach(w)
	return v
}

// Attach subscribes to w and renders its events from now on until Finish.
// Only the first call attaches; an Off view never does.
func (v *View) Attach(w *event.Writer) {
	v.attach.Do(func() {
		if v.o.Mode == Off || w == nil {
			close(v.done)
			close(v.tickDone)
			return
		}
		v.w = w
		v.sub = w.Subscribe(v.o.Queue)
		go v.read()
		if v.o.Mode == TTY {
			go v.tick()
		} else {
			close(v.tickDone)
		}
	})
}

// SetAnswerPaths sets Options.PermBase and Options.ControlSocket once the
// run knows them.
func (v *View) SetAnswerPaths(permBase, controlSocket string) {
	v.mu.Lock()
	v.o.PermBase, v.o.ControlSocket = permBase, controlSocket
	v.mu.Unlock()
}

// Active reports whether the view renders anything.
func (v *View) Active() bool { return v.o.Mode != Off }

func (v *View) read() {
	defer close(v.done)
	var buf []event.Event
	for {
		var ok bool
		buf, ok = v.sub.Receive(buf[:0])
		v.mu.Lock()
		for i, ev := range buf {
			v.render(ev)
			if seq, ok := ev[event.KeySeq].(int64); ok && seq > v.seen.Load() {
				v.seen.Store(seq)
			}
			buf[i] = nil // the events belong to the writer: keep none
		}
		v.mu.Unlock()
		if len(buf) > 0 {
			select {
			case v.progress <- struct{}{}:
			default:
			}
		}
		if !ok {
			return
		}
	}
}

func (v *View) tick() {
	defer close(v.tickDone)
	t := time.NewTicker(v.o.Tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			v.mu.Lock()
			if v.statusOn {
				v.drawStatus()
			}
			v.mu.Unlock()
		case <-v.stopTick:
			return
		}
	}
}

// Finish waits (up to FinishBudget) for the view to render every event
// written to the attached writer so far, stops it and prints the end summary. It is
// idempotent; after it the view renders nothing more.
func (v *View) Finish(s Summary) {
	v.finished.Do(func() {
		v.Attach(nil) // a view never attached stops here
		if v.sub == nil {
			return
		}
		target := v.w.LatestSeq()
		deadline := time.NewTimer(FinishBudget)
		defer deadline.Stop()
	wait:
		for v.seen.Load() < target {
			select {
			case <-v.progress:
			case <-v.done:
				break wait
			case <-deadline.C:
				break wait
			}
		}
		v.sub.Close()
		<-v.done
		close(v.stopTick)
		<-v.tickDone
		v.mu.Lock()
		defer v.mu.Unlock()
		v.summary(s)
	})
}

// Writer is where other stderr text goes while the view runs: each write
// starts on a line of its own, and the status line is redrawn under it.
func (v *View) Writer() io.Writer {
	if v.o.Mode == Off {
		return v.o.Out
	}
	return viewWriter{v}
}

type viewWriter struct{ v *View }

func (w viewWriter) Write(p []byte) (int, error) {
	v := w.v
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clearStatus()
	v.endLine()
	n, err := v.o.Out.Write(p)
	if len(p) > 0 && p[len(p)-1] != '\n' {
		v.midLine = true
	}
	v.redraw()
	return n, err
}

// Notice prints text (one or more lines) between the transcript's lines.
func (v *View) Notice(text string) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, _ = v.Writer().Write([]byte(text))
}

// Elapsed is the time since Start.
func (v *View) elapsed() time.Duration { return v.o.Now().Sub(v.start) }

// Mode is how the view renders.
func (v *View) Mode() Mode { return v.o.Mode }
