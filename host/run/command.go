package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Command is `avenor run` once its command line is parsed
// (docs/cli.md#avenor-run): the Request host/run validates, plus what only
// the command's own process has — the event log destination, the control
// socket, the live view and its standard streams. Run does the rest.
type Command struct {
	Request
	// OnEvent is --on-event: a file, or "-" for stdout; "" for none.
	OnEvent string
	// ControlSocket is --control-socket.
	ControlSocket string
	// Progress and Quiet are --progress and --quiet (liveview.Choose).
	Progress string
	Quiet    bool
	// AutoApprove is --auto-approve as given on the command line (the
	// config's value arrives through Settings).
	AutoApprove bool
	// Stdout gets --on-event - .
	Stdout io.Writer
	// Env is what resolution reads of the process; Run sets its Logger.
	Env Env
	// NewLogger is avenor's own logger writing to stderr when no log file
	// was asked for: the live view's writer once the view is on.
	NewLogger func(stderr io.Writer) hclog.Logger
}

// Run validates, wires the host and runs; it returns the exit code. A
// run that ends before its runtime starts writes its FAILED sentinel.
func (c *Command) Run(ctx context.Context) int {
	if c.RunID == "" {
		c.RunID = NewRunID()
	}
	view, terminal, err := c.newView()
	if err == nil {
		defer view.Finish(liveview.Summary{}) // a run that never started: stop the view
	}
	var prep *Prepared
	if err == nil {
		c.Env.Logger = c.NewLogger(c.Stderr)
		prep, err = Prepare(c.Env, c.Request)
	}
	if err != nil {
		return c.failSetup(BackendHint(ctx, c.Env, err))
	}
	spec := prep.Spec
	opts := spec.Options
	hostrt.CleanFiles(opts.SentinelPath, opts.PermBase, opts.Logger.Warn)

	events, closeEvents, err := eventDestination(c.OnEvent, c.Stdout)
	if err != nil {
		return c.failSetup(err)
	}
	defer closeEvents()
	spec.Options.Events = events

	runCtx, stop := Interruptible()
	defer stop()
	c.wirePermissions(&spec, view, terminal)
	spec.ControlSocket, spec.Attach = c.ControlSocket, view.Attach
	if c.HTTPDebug != "" {
		spec.HTTPDebug = func(cfg httpdebug.Config) (*httpdebug.Server, error) {
			return StartHTTPDebug(cfg, c.HTTPDebug, c.HTTPDebugTokenFile, c.Stderr, terminal, opts.Logger)
		}
	}
	// A loop or team config that does not load ends the run with
	// STOP_REASON=error; a backend its phases name that does not resolve
	// is a setup failure (exit_1).
	spec.Phased, err = prep.Phased()
	var le *LoadError
	switch {
	case errors.As(err, &le):
		fmt.Fprintf(c.Stderr, "avenor: %v\n", err)
		if c.SentinelFile != "" {
			if werr := sentinel.Write(c.SentinelFile, sentinel.Record{ExitCode: sentinel.ExitFailure, StopReason: sentinel.StopError, RunID: c.RunID}); werr != nil {
				fmt.Fprintf(c.Stderr, "avenor: writing sentinel: %v\n", werr)
			}
		}
		return sentinel.ExitFailure
	case err != nil:
		return c.failSetup(err)
	}
	if err := checkPhasedLaunch(runCtx, spec); err != nil {
		return c.failSetup(err)
	}
	res, err := Start(runCtx, spec)
	if err != nil {
		return c.failSetup(err)
	}
	code := exitWithSentinel(res, c.Stderr)
	view.Finish(liveview.Summary{StopReason: res.StopReason, ExitCode: code, SessionID: res.SessionID,
		EventLog: c.OnEvent, Sentinel: c.SentinelFile})
	return code
}

// newView is the run's live view (--progress, --quiet): on when stderr is
// a terminal unless asked otherwise. From here on Stderr goes through the
// view, so avenor's own messages never land inside its status line; with
// the view off it is the writer it was, byte for byte what a harness saw
// before. terminal says whether stderr was a terminal.
func (c *Command) newView() (view *liveview.View, terminal bool, err error) {
	file, _ := c.Stderr.(*os.File)
	terminal = liveview.IsTerminal(file)
	mode, err := liveview.Choose(c.Progress, c.Quiet, terminal)
	if err != nil {
		return nil, terminal, err
	}
	noColor := c.Env.Getenv != nil && c.Env.Getenv("NO_COLOR") != "" // https://no-color.org
	view = liveview.New(liveview.Options{Out: c.Stderr, Mode: mode, Color: mode == liveview.TTY && !noColor})
	c.Stderr = view.Writer()
	return view, terminal, nil
}

// wirePermissions points the broker's unanswered requests at the person:
// asked inline under the live view (answersInline), else told on stderr.
func (c *Command) wirePermissions(spec *Spec, view *liveview.View, terminal bool) {
	view.SetAnswerPaths(spec.Permissions.FileBase, c.ControlSocket)
	inline := c.answersInline(spec.Permissions, view, terminal)
	if inline {
		view.AnswerInline()
		spec.Permissions.Ask = askAtTerminal(view, c.Stdin, c.Stderr)
	}
	spec.Permissions.OnUnanswered = func(req sdk.PermissionRequest) {
		if inline && len(req.Options) > 0 {
			return // the live view asks it
		}
		fmt.Fprint(c.Stderr, unansweredNote(req, c.ControlSocket, view.Active()))
	}
	spec.Permissions.OnQuestionUnanswered = func(req sdk.QuestionRequest, timeout time.Duration) {
		fmt.Fprint(c.Stderr, permission.QuestionNote(req, timeout, c.ControlSocket))
	}
}

// eventDestination is where the run's NDJSON goes (--on-event): stdout for
// "-", else the file (nil: none); closeEvents closes it.
func eventDestination(onEvent string, stdout io.Writer) (events io.Writer, closeEvents func(), err error) {
	switch onEvent {
	case "":
		return nil, func() {}, nil
	case "-":
		// The one stream that is not a file: NDJSON on stdout, for a pipe.
		return stdout, func() {}, nil
	}
	// A named pipe or a device is refused here: a pipe whose reader
	// stalls would block the log, /dev/full would fail it.
	// A regular file that stalls anyway (a hung mount) ends the run
	// after event.MaxWriteStall.
	file, err := regularfile.CreateLog(onEvent)
	if err != nil {
		return nil, nil, fmt.Errorf("--on-event: %w", err)
	}
	// Close does not wait for a write stuck in the kernel (a regular
	// file is not pollable), so a stalled log cannot hold up the exit.
	return file, func() { file.Close() }, nil
}

// exitWithSentinel is the run's exit code once its sentinel was (or was not)
// written. A harness that waits for the sentinel never sees a run end whose
// sentinel could not be written (a full disk, a missing directory), so such
// a run never exits 0: a clean end becomes exit 1, said on stderr; any other
// code already says the run failed and is kept.
func exitWithSentinel(res Result, stderr io.Writer) int {
	if res.SentinelErr == nil || res.ExitCode != sentinel.ExitOK {
		return res.ExitCode
	}
	fmt.Fprintf(stderr, "avenor: the run ended well but its sentinel was not written; exit %d\n", sentinel.ExitFailure)
	return sentinel.ExitFailure
}

func (c *Command) failSetup(err error) int {
	fmt.Fprintf(c.Stderr, "avenor: %v\n", err)
	if c.SentinelFile != "" {
		writeExitSentinel(c.SentinelFile, sentinel.ExitFailure, c.RunID, c.Stderr)
	}
	return sentinel.ExitFailure
}

// WriteUsageSentinel writes FAILED with EXIT_CODE=2 when a run's command
// line (args, after "run") could not be parsed but a sentinel path is
// recognisable in it (docs/run.md#validation).
func WriteUsageSentinel(args []string, stderr io.Writer) {
	path := rawFlagValue(args, "sentinel-file")
	if path == "" {
		return
	}
	writeExitSentinel(path, sentinel.ExitRefusal, rawFlagValue(args, "run-id"), stderr)
}

// writeExitSentinel writes the FAILED sentinel of a run that ended before a
// runtime started. As in the original, the stop reason is derived from the
// exit code (docs/run.md#exit-codes's inverse map): refusal for 2, exit_1 for 1 (docs/run.md#lifecycle).
// Only a loop/team config that fails to load says STOP_REASON=error.
func writeExitSentinel(path string, exit int, runID string, stderr io.Writer) {
	rec := sentinel.Record{ExitCode: exit, StopReason: sentinel.DefaultStopReason(exit), RunID: runID}
	if err := sentinel.Write(path, rec); err != nil {
		fmt.Fprintf(stderr, "avenor: writing sentinel: %v\n", err)
	}
}

// rawFlagValue finds --name v, --name=v, -name v or -name=v in unparsed args.
func rawFlagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, p := range []string{"--" + name, "-" + name} {
			if a == p && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, p+"="); ok {
				return v
			}
		}
	}
	return ""
}

// StartHTTPDebug starts the --http-debug adapter (docs/control-protocol.md#http-debug)
// on addr for cfg's target (run's or stable's), writing tokenFile when
// set; the token is printed on stderr only when showToken (stderr is a
// terminal; through the live view's writer the line lands above the view).
func StartHTTPDebug(cfg httpdebug.Config, addr, tokenFile string, stderr io.Writer, showToken bool, logger hclog.Logger) (*httpdebug.Server, error) {
	cfg.Addr, cfg.TokenFile, cfg.Stderr, cfg.ShowToken = addr, tokenFile, stderr, showToken
	cfg.Logger = logger.Named("httpdebug")
	srv, err := httpdebug.Start(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("--http-debug: %w", err)
	}
	return srv, nil
}

// Interruptible is a context that SIGINT or SIGTERM cancels with
// hostrt.ErrInterrupted as its cause: a run then ends cancelled, exit 130.
// stop stops listening for the signals and cancels it.
func Interruptible() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancel(hostrt.ErrInterrupted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// NewRunID is a fresh correlation id: 16 random hex characters.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// BackendNames are the backends a run here could name: those the plugins
// it would find serve (the project's pins first, the config files' plugin
// mappings applied, as a run resolves them). A config or lock that does
// not read leaves them all out: completion has nowhere to report it.
func BackendNames(ctx context.Context, env Env) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := ResolveWorkingDir(env)
	if err != nil {
		return nil
	}
	return res.Finder.BackendNames(ctx)
}

// BackendHint is plugins.BackendHint with the backends installed here; an
// err that is not a backend nobody serves is returned as it is.
func BackendHint(ctx context.Context, env Env, err error) error {
	var nf *plugins.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	env.Logger = nil
	names := BackendNames(ctx, env)
	if len(names) == 0 {
		return err
	}
	return plugins.BackendHint(nf, names)
}
