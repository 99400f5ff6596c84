package agentproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	sdkruntime "github.com/avenor-go/avenor/sdk/runtime"
)

// Spec is how to start a runtime CLI. Zero values are valid defaults, except
// that Path is required.
type Spec struct {
	// Path is the CLI's name, looked up in the plugin's own PATH (not in
	// Env's), or a path to it. Required.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Dir is the working directory; "" means the plugin's.
	Dir string
	// Env is the CLI's full environment; nil means os.Environ().
	Env []string
	// MaxLineBytes bounds one stdout line; <= 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// StderrTailBytes is how much of the end of stderr StderrTail keeps;
	// <= 0 means DefaultStderrTailBytes.
	StderrTailBytes int
	// InstallHint ends the error returned when the CLI is not found, e.g.
	// "install it with: npm install -g @openai/codex"; "" means a generic
	// hint.
	InstallHint string
	// CancelGrace is the grace of the Stop that ctx cancellation triggers;
	// <= 0 means DefaultCancelGrace.
	CancelGrace time.Duration
	// Logger receives each stderr line at debug level; nil discards them.
	Logger hclog.Logger
	// Sandbox, when active, launches the CLI inside it (sandbox.go): the
	// CLI and every process it starts. Start fails rather than launch
	// without it.
	Sandbox sdkruntime.Sandbox
}

// Line is one line of the CLI's stdout, or why one could not be delivered.
type Line struct {
	// Data is the line without '\n' and without a trailing '\r' (empty for
	// an empty line, nil when Err is set). It is the receiver's to keep.
	Data []byte
	// Err is a *LineTooLongError for a line past Spec.MaxLineBytes (reading
	// goes on with the next line), or a read error (Lines is closed after it).
	Err error
}

// NotFoundError says the runtime CLI is not installed where it was looked
// for. The fault is the user's environment, not the plugin's. It matches
// exec.ErrNotFound with errors.Is.
type NotFoundError struct {
	Path string // Spec.Path
	Hint string // what to install
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("agentproc: runtime CLI %q not found %s; %s", e.Path, e.Where(), e.Hint)
}

// Where says where the CLI was looked for: "in PATH" for a bare name, "at
// that path" for a path.
func (e *NotFoundError) Where() string {
	if strings.Contains(e.Path, "/") {
		return "at that path"
	}
	return "in PATH"
}

func (e *NotFoundError) Unwrap() error { return exec.ErrNotFound }

// Process is a running CLI started by Start. Its methods are safe for
// concurrent use.
//
// Read Lines until it is closed, or call Stop: a goroutine holds each line
// until it is received, and only Stop (or ctx cancellation) releases it.
type Process struct {
	name string // Spec.Path, for messages
	cmd  *exec.Cmd
	pid  int
	log  hclog.Logger

	// The tree: every process the CLI starts carries token in TreeEnv and,
	// when cgroups are usable, lives in cg (nil otherwise). The CLI's
	// process group pgid is led by reaper (reaper.go), or by the CLI itself
	// where no reaper could start (reaper nil, pgid == pid).
	token  string
	cg     *Cgroup
	pgid   int
	reaper *exec.Cmd
	// tempDir is the sandbox's private temp dir, removed with the tree.
	tempDir string

	stdin  *os.File
	stdout *drainReader
	stderr *drainReader
	lines  chan Line
	tail   *tailBuffer

	exited     chan struct{} // closed once the CLI is reaped
	exitErr    error         // written before exited is closed
	stderrDone chan struct{} // closed when stderr has been read to its end
	done       chan struct{} // closed once exited and stderrDone are
	abandon    chan struct{} // closed by Stop: nobody will receive from lines
	wg         sync.WaitGroup
	unwatchCtx func() bool

	stopOnce sync.Once
	stopErr  error
}

// Start starts the CLI described by spec in a process group of its own, with
// stdin, stdout and stderr on pipes. Cancelling ctx stops it as Stop does,
// with Spec.CancelGrace.
//
// When the CLI cannot be found the error is a *NotFoundError naming it and
// saying what to install.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if spec.Path == "" {
		return nil, ErrNoPath
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("agentproc: not starting %s: %w", spec.Path, err)
	}
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, lookPathError(spec, err)
	}
	argv := append([]string{spec.Path}, spec.Args...)
	var sbx launch
	if spec.Sandbox.Active() {
		if sbx, err = sandboxed(spec, path); err != nil {
			return nil, err
		}
		path, argv = sbx.path, sbx.argv
	}
	maxLine := spec.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	tailBytes := spec.StderrTailBytes
	if tailBytes <= 0 {
		tailBytes = DefaultStderrTailBytes
	}
	grace := spec.CancelGrace
	if grace <= 0 {
		grace = DefaultCancelGrace
	}
	log := spec.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}

	// Our own pipes rather than cmd.StdoutPipe: with *os.File on both sides
	// exec starts no copying goroutines, and we decide when the read ends
	// close instead of cmd.Wait closing them under a reader's feet.
	var ends [3][2]*os.File // stdin, stdout, stderr: {read end, write end}
	for i := range ends {
		r, w, err := os.Pipe()
		if err != nil {
			for _, e := range ends[:i] {
				closeFiles(e[:])
			}
			sbx.removeTemp()
			return nil, fmt.Errorf("agentproc: creating pipes for %s: %w", spec.Path, err)
		}
		ends[i] = [2]*os.File{r, w}
	}
	stdinR, stdinW := ends[0][0], ends[0][1]
	stdoutR, stdoutW := ends[1][0], ends[1][1]
	stderrR, stderrW := ends[2][0], ends[2][1]
	parent := []*os.File{stdinW, stdoutR, stderrR}
	child := []*os.File{stdinR, stdoutW, stderrW}

	token := NewTreeToken()
	env := spec.Env
	if env == nil {
		env = os.Environ()
	} else if v, ok := os.LookupEnv(TreeEnv); ok {
		// The trees the plugin belongs to hold its CLI too.
		env = append([]string{TreeEnv + "=" + v}, env...)
	}
	env = append(WithTreeToken(env, token), sbx.env...)
	cg, cgErr := NewCgroup("avenor-rt")
	if cgErr != nil {
		log.Debug("runtime CLI without a cgroup of its own; its tree is owned through its process group and "+TreeEnv, "reason", cgErr)
	}
	// The reaper cleans the tree up if the plugin dies with the host,
	// which leaves nobody else to; it leads the group the CLI joins.
	var cgDir string
	if cg != nil {
		cgDir = cg.Path()
	}
	reaper, reaperErr := startReaper(token, cgDir, sbx.tempDir)
	pgid := 0
	if reaperErr != nil {
		log.Debug("runtime CLI without a reaper; it leads its own process group", "reason", reaperErr)
	} else {
		pgid = reaper.Process.Pid
	}
	newCmd := func(cg *Cgroup, pgid int) *exec.Cmd {
		return &exec.Cmd{
			Path:        path,
			Args:        argv,
			Dir:         spec.Dir,
			Env:         env,
			Stdin:       stdinR,
			Stdout:      stdoutW,
			Stderr:      stderrW,
			SysProcAttr: sysProcAttr(cg, pgid),
		}
	}
	cmd := newCmd(cg, pgid)
	p := &Process{
		name:       spec.Path,
		cmd:        cmd,
		token:      token,
		cg:         cg,
		pgid:       pgid,
		reaper:     reaper,
		tempDir:    sbx.tempDir,
		stdin:      stdinW,
		stdout:     &drainReader{f: stdoutR},
		stderr:     &drainReader{f: stderrR},
		lines:      make(chan Line), // unbuffered: at most one line in flight
		tail:       newTailBuffer(tailBytes),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		done:       make(chan struct{}),
		abandon:    make(chan struct{}),
	}
	started := make(chan error, 1)
	ready := make(chan struct{})
	p.wg.Add(1)
	go p.run(started, ready, newCmd)
	err = <-started
	// The child has its copies now (or never will); ours would keep the
	// pipes from reaching EOF.
	closeFiles(child)
	if err != nil {
		closeFiles(parent)
		sbx.removeTemp()
		return nil, fmt.Errorf("agentproc: starting %s (%s): %w", spec.Path, path, err)
	}
	cmd = p.cmd // run may have restarted it without the cgroup or the reaper
	p.pid = cmd.Process.Pid
	p.log = log.With("pid", p.pid)
	p.log.Debug("started runtime CLI", "path", path, "args", spec.Args)

	p.wg.Add(2)
	p.unwatchCtx = context.AfterFunc(ctx, func() { p.Stop(grace) })
	close(ready)
	go p.readStdout(maxLine)
	go p.readStderr()
	return p, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func lookPathError(spec Spec, err error) error {
	if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, fs.ErrNotExist) {
		// Found but unusable: not executable, or only in "." (exec.ErrDot).
		return fmt.Errorf("agentproc: cannot run runtime CLI %q: %w", spec.Path, err)
	}
	hint := spec.InstallHint
	if hint == "" {
		hint = "install it and make sure the plugin's PATH includes it"
	}
	return &NotFoundError{Path: spec.Path, Hint: hint}
}

// PID is the CLI's process id.
func (p *Process) PID() int { return p.pid }

// PGID is the CLI's process group id. Its leader is the CLI's reaper, which
// Start starts first and which ends with the group; where no reaper could
// start, the CLI leads a new group and PGID is its PID.
func (p *Process) PGID() int { return p.pgid }

// Stdin is the CLI's standard input. Closing it asks an agent CLI in
// streaming mode to finish; Stop closes it too.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Lines delivers the CLI's stdout line by line and is closed at end of
// output: when the CLI and everything holding its stdout have exited, or
// OutputDrainIdle after the CLI exited if something it left behind still
// holds stdout, or when Stop returns. Output not received by the time Stop
// returns is discarded; to read a CLI's last words, close Stdin and read
// Lines until it is closed.
func (p *Process) Lines() <-chan Line { return p.lines }

// StderrTail returns the last Spec.StderrTailBytes bytes the CLI wrote to
// stderr, for crash reports. It is complete once Done is closed.
func (p *Process) StderrTail() string { return p.tail.String() }

// Done is closed once the CLI has exited and been reaped and its stderr has
// been read.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitErr is why the CLI exited: nil for exit status 0, otherwise an error
// naming the CLI and wrapping *exec.ExitError. It is nil before Done.
func (p *Process) ExitErr() error {
	select {
	case <-p.exited:
		return p.exitErr
	default:
		return nil
	}
}

// Stop ends the CLI and everything in its process group, politely first:
// close stdin and wait up to grace; SIGTERM the group and wait up to grace;
// then SIGKILL the group. It always reaps the CLI, kills whatever the CLI
// left in its group, and returns once every goroutine of the Process has
// ended.
//
// Stop returns nil if the CLI exited by itself (before Stop, or on stdin
// closing), and an error wrapping ErrTerminated or ErrKilled if it had to be
// signalled. It is idempotent: later and concurrent calls wait for the first
// and return its result.
func (p *Process) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(grace) })
	return p.stopErr
}

func (p *Process) stop(grace time.Duration) error {
	// Agent CLIs in streaming mode finish the turn and exit at EOF on stdin.
	_ = p.stdin.Close()
	var err error
	if !p.waitExited(grace) {
		if serr := signalGroup(p.pgid, syscall.SIGTERM); serr != nil {
			p.log.Warn("stopping runtime CLI", "error", serr)
		}
		err = fmt.Errorf("agentproc: %s (pid %d) did not exit within %s of stdin closing; sent SIGTERM to its process group: %w",
			p.name, p.pid, grace, ErrTerminated)
		if !p.waitExited(grace) {
			if kerr := KillGroup(p.pgid); kerr != nil {
				p.log.Warn("stopping runtime CLI", "error", kerr)
			}
			err = fmt.Errorf("agentproc: %s (pid %d) ignored SIGTERM for %s; sent SIGKILL to its process group: %w",
				p.name, p.pid, grace, ErrKilled)
			<-p.exited
		}
	}
	// Whatever the CLI left in its group was killed once it was reaped
	// (killTree, before exited closed), while the group's leader was still
	// held, so that its id could not have been reused.
	close(p.abandon)
	// Closing the read ends unblocks reads in flight at once, rather than
	// after OutputDrainIdle.
	_ = p.stdout.f.Close()
	_ = p.stderr.f.Close()
	p.wg.Wait()
	return err
}

// killTree kills everything the CLI started, wherever it went: its cgroup,
// its process group, and every process carrying its token. Called once the
// CLI is reaped.
func (p *Process) killTree() {
	var killed []int
	if p.cg != nil {
		var err error
		if killed, err = p.cg.Kill(); err != nil {
			p.log.Warn("killing what the runtime CLI left behind", "error", err)
		}
	}
	// The reaper, the group's leader, dies with it: its work is the
	// plugin's now.
	if err := KillGroup(p.pgid); err != nil {
		p.log.Warn("killing what the runtime CLI left behind", "error", err)
	}
	if n := KillMarked(p.token); n > 0 {
		p.log.Debug("killed processes the runtime CLI left outside its group", "count", n)
	}
	ReapKilled(killed)
	p.dropReaper()
	if p.tempDir != "" {
		if err := os.RemoveAll(p.tempDir); err != nil {
			p.log.Warn("removing the sandbox's private temp dir", "error", err)
		}
	}
	if p.cg != nil {
		if err := p.cg.Remove(CgroupRemoveWait); err != nil {
			p.log.Warn("removing the runtime CLI's cgroup", "error", err)
		}
	}
}

// dropReaper kills and reaps the reaper, if there is one.
func (p *Process) dropReaper() {
	if p.reaper == nil {
		return
	}
	_ = p.reaper.Process.Kill()
	_ = p.reaper.Wait()
	p.reaper = nil
}

// waitExited reports whether the CLI is reaped within d.
func (p *Process) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// run starts the CLI, reports the outcome on started, and once Start has
// finished setting up p (ready), reaps the CLI and gives its output a bounded
// time to drain.
//
// Linux sends Pdeathsig when the *thread* that forked exits, not the process
// (go.dev/issue/27505), and Go ends a thread when a goroutine locked to it
// exits. Forking from a thread that run keeps locked until the CLI is reaped
// means no other goroutine can be scheduled there, lock it and end it, and
// the CLI is killed only when the plugin really dies.
//
// A CLI that cannot be started into its cgroup (no clone3, a seccomp filter,
// no right to move a process there) is started again without one; one that
// cannot join its reaper's group (the reaper died), in a group of its own.
func (p *Process) run(started chan<- error, ready <-chan struct{}, newCmd func(*Cgroup, int) *exec.Cmd) {
	defer p.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := p.cmd.Start()
	if err != nil && p.cg != nil {
		_ = p.cg.Remove(0)
		p.cg = nil
		p.cmd = newCmd(nil, p.pgid)
		err = p.cmd.Start()
	}
	if err != nil && p.reaper != nil {
		p.dropReaper()
		p.cmd = newCmd(nil, 0)
		err = p.cmd.Start()
	}
	if err != nil {
		p.dropReaper()
		started <- err
		return
	}
	if p.reaper == nil {
		p.pgid = p.cmd.Process.Pid
	}
	started <- nil
	<-ready

	err = p.cmd.Wait()
	if err != nil {
		err = fmt.Errorf("agentproc: %s (pid %d) exited: %w", p.name, p.pid, err)
	}
	// Whatever the CLI started has lost its owner: a shell tool in a
	// session of its own, a helper it forgot. Kill it all now, not at Stop,
	// so a CLI that dies mid-tool leaves nothing behind.
	p.killTree()
	p.exitErr = err
	close(p.exited)
	p.unwatchCtx()
	p.log.Debug("runtime CLI exited", "error", err)

	p.stdout.startDraining()
	p.stderr.startDraining()
	<-p.stderrDone
	close(p.done)
}

func (p *Process) readStdout(maxLine int) {
	defer p.wg.Done()
	defer close(p.lines)
	defer p.stdout.f.Close()
	lr := NewLineReader(p.stdout, maxLine)
	for {
		data, err := lr.Next()
		var line Line
		switch {
		case err == nil:
			line.Data = bytes.Clone(data)
		case errors.Is(err, ErrLineTooLong):
			line.Err = err
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.log.Debug("stdout still held open after the runtime CLI exited; stopped reading it")
			return
		default:
			p.send(Line{Err: fmt.Errorf("agentproc: reading stdout of %s (pid %d): %w", p.name, p.pid, err)})
			return
		}
		if !p.send(line) {
			return
		}
	}
}

// send delivers a line unless Stop has given up on the receiver.
func (p *Process) send(l Line) bool {
	select {
	case p.lines <- l:
		return true
	case <-p.abandon:
		return false
	}
}

func (p *Process) readStderr() {
	defer p.wg.Done()
	defer close(p.stderrDone)
	defer p.stderr.f.Close()
	// The tail sees the raw bytes; the logger sees framed lines.
	lr := NewLineReader(io.TeeReader(p.stderr, p.tail), MaxStderrLogLineBytes)
	for {
		data, err := lr.Next()
		var tooLong *LineTooLongError
		switch {
		case err == nil:
			p.log.Debug(string(data))
		case errors.As(err, &tooLong):
			p.log.Debug("stderr line too long to log", "bytes", tooLong.Size)
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
			return
		default:
			p.log.Debug("reading stderr failed", "error", err)
			return
		}
	}
}

// drainReader is a pipe's read end that, once the CLI has exited, stops
// blocking after OutputDrainIdle without data. A helper the CLI left behind
// holding the pipe open cannot then keep Lines and Done open forever, while
// a slow receiver loses nothing: the deadline is renewed before every read.
type drainReader struct {
	f        *os.File
	draining atomic.Bool
}

func (d *drainReader) Read(b []byte) (int, error) {
	if d.draining.Load() {
		_ = d.f.SetReadDeadline(time.Now().Add(OutputDrainIdle))
	}
	return d.f.Read(b)
}

// startDraining also bounds a read already in flight, which started before
// the CLI exited and so without a deadline.
func (d *drainReader) startDraining() {
	d.draining.Store(true)
	_ = d.f.SetReadDeadline(time.Now().Add(OutputDrainIdle))
}
