package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/permission"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// runFlags are the flags of `avenor run` (docs/cli.md#avenor-run).
type runFlags struct {
	agent, prompt, promptFile, loopFile, teamFile, rosterFile, rosterEntry string
	label, dir, resume, serverURL, backend, model, thinking                string
	onEvent, sentinelFile, permissionHandler, controlSocket, httpDebug     string
	runID, ponyConfig                                                      string
	autoApprove, quiet                                                     bool
	progress, onPermission                                                 string
	timeout, progressTimeout, permissionClaimTimeout                       time.Duration
	maxRetries                                                             int
	// httpDebugTokenFile receives the --http-debug token (0600), for scripts.
	httpDebugTokenFile string
}

func newRunCmd(env Env) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run one prompt through a backend (the default command)",
		Long:  help("run"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return refuseRunArg(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{runMain(cmd, f, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.backend, "backend", "opencode-acp", "backend: opencode-acp, opencode-http, codex-app-server, gemini-acp, cursor-acp, pi, claude, claude-channel, echo, or any installed plugin's")
	fl.StringVar(&f.prompt, "prompt", "", "inline prompt, UTF-8 (exclusive with --prompt-file)")
	fl.StringVar(&f.promptFile, "prompt-file", "", fmt.Sprintf("file holding the prompt, UTF-8, at most %d KiB; - for stdin (exclusive with --prompt)", sdk.MaxPromptBytes>>10))
	fl.StringVar(&f.dir, "dir", ".", "working directory of the agent")
	fl.StringVar(&f.model, "model", "", "backend-specific model id")
	fl.StringVar(&f.agent, "agent", "", "agent name")
	fl.StringVar(&f.thinking, "thinking", "", "thinking level: off|minimal|low|medium|high|xhigh|max, as the backend accepts")
	fl.StringVar(&f.resume, "resume", "", "resume an existing session by id")
	fl.StringVar(&f.label, "label", "", "free-form label, stamped as run_label on every event")
	fl.StringVar(&f.runID, "run-id", "", "correlation id stamped on every event (default: 16 random hex chars)")
	fl.StringVar(&f.onEvent, "on-event", "", "NDJSON event log (a regular file, or /dev/null), created or truncated at start; - writes it to stdout")
	fl.StringVar(&f.sentinelFile, "sentinel-file", "", "completion sentinel, written once when the run ends")
	fl.DurationVar(&f.timeout, "timeout", 0, "overall wall clock, e.g. 30m (0: none); ends with exit 124")
	fl.DurationVar(&f.progressTimeout, "progress-timeout", 0, "end the turn after this long without an event (0: none); exit 124")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "extra attempts after an attempt that exits 1, resuming its session")
	fl.BoolVar(&f.autoApprove, "auto-approve", false, "approve ordinary permission requests once: their allow_once option, else their first allow option")
	fl.StringVar(&f.onPermission, "on-permission", permission.UnansweredWait, "a permission request nobody is set up to answer: wait (say so on stderr and wait), deny (answer its reject option) or fail (end the run, exit 1)")
	fl.String("permission-mode", "", "what turns may do without asking: default (ask for edits and commands), accept-edits, plan (read-only) or full-access; refused where the backend cannot honour it")
	fl.String("append-system-prompt", "", "standing instructions appended to the system prompt: TEXT, or @FILE (UTF-8)")
	fl.String("allowed-tools", "", "exact tool list, comma-separated, in the backend's own tool names; \"\" allows no tool (default: the backend's tools)")
	fl.String("mcp-config", "", "JSON file of MCP servers ({\"mcpServers\":{...}}: stdio command/args/env or http url/headers; ${NAME} values from the environment)")
	fl.StringVar(&f.permissionHandler, "permission-handler", "", "file:<base> permission file protocol (default: derived from --sentinel-file)")
	fl.DurationVar(&f.permissionClaimTimeout, "permission-claim-timeout", 0, "how long a control client may hold a permission request (0: no deadline)")
	fl.StringVar(&f.serverURL, "server-url", "", "external runtime server (opencode-http)")
	fl.StringVar(&f.controlSocket, "control-socket", "", "Unix socket for the control plane")
	fl.StringVar(&f.httpDebug, "http-debug", "", "loopback address (:port, localhost:port, 127.0.0.1:port) of the HTTP/SSE debug adapter; the token is shown only on a terminal")
	fl.StringVar(&f.httpDebugTokenFile, "http-debug-token-file", "", "write the --http-debug token to this file (0600), for scripts")
	fl.StringVar(&f.loopFile, "loop-file", "", "phase loop config (exclusive with --resume and --team-file)")
	fl.StringVar(&f.teamFile, "team-file", "", "team config (exclusive with --resume and --loop-file)")
	fl.StringVar(&f.rosterFile, "roster-file", "", "roster of named backend/agent/model loadouts")
	fl.StringVar(&f.rosterEntry, "roster-entry", "", "entry of --roster-file to run")
	fl.BoolVar(&f.quiet, "quiet", false, "no live view on stderr (the default when stderr is not a terminal)")
	fl.StringVar(&f.progress, "progress", "", "live view on stderr: tty, plain (one line per event, for CI logs) or off (default: tty when stderr is a terminal, else off)")
	fl.StringVar(&f.ponyConfig, "pony-config", "", "config of the pony backend")
	_ = fl.MarkHidden("pony-config")
	return cmd
}

// writeUsageSentinel writes FAILED with EXIT_CODE=2 when a run's command line
// could not be parsed but a sentinel path is recognisable in it (docs/run.md#validation).
func writeUsageSentinel(args []string, stderr io.Writer) {
	path := rawFlagValue(args, "sentinel-file")
	if path == "" {
		return
	}
	writeExitSentinel(path, exitUsage, rawFlagValue(args, "run-id"), stderr)
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

// runMain validates, wires the host and runs. It returns the exit code.
func runMain(cmd *cobra.Command, f *runFlags, env Env) int {
	if f.runID == "" {
		f.runID = newRunID()
	}
	view, env, err := newView(f, env)
	if err == nil {
		defer view.Finish(liveview.Summary{}) // a run that never started: stop the view
	}
	var prep *hostrun.Prepared
	if err == nil {
		prep, err = hostrun.Prepare(env.resolveEnv(env.newLogger()), runRequest(cmd, f, env))
	}
	if err != nil {
		return failSetup(env, f, backendHint(cmd.Context(), env, err))
	}
	spec := prep.Spec
	opts := spec.Options
	hostrt.CleanFiles(opts.SentinelPath, opts.PermBase, opts.Logger.Warn)

	events, closeEvents, err := runEventLog(f.onEvent, env.Stdout)
	if err != nil {
		return failSetup(env, f, err)
	}
	defer closeEvents()
	spec.Options.Events = events

	ctx, stop := interruptible()
	defer stop()

	view.SetAnswerPaths(spec.Permissions.FileBase, f.controlSocket)
	inline := answersInline(f, spec.Permissions, env, view)
	if inline {
		view.AnswerInline()
		spec.Permissions.Ask = askAtTerminal(view, env.Stdin, env.Stderr)
	}
	spec.Permissions.OnUnanswered = func(req sdk.PermissionRequest) {
		if inline && len(req.Options) > 0 {
			return // the live view asks it
		}
		fmt.Fprint(env.Stderr, unansweredNote(req, f.controlSocket, view.Active()))
	}
	spec.ControlSocket, spec.Attach = f.controlSocket, view.Attach
	if f.httpDebug != "" {
		spec.HTTPDebug = func(cfg httpdebug.Config) (*httpdebug.Server, error) {
			return startHTTPDebug(f.httpDebug, f.httpDebugTokenFile, cfg, env, opts.Logger)
		}
	}
	// A loop or team config that does not load ends the run with
	// STOP_REASON=error; a backend its phases name that does not resolve
	// is a setup failure (exit_1).
	spec.Phased, err = prep.Phased()
	var le *hostrun.LoadError
	switch {
	case errors.As(err, &le):
		fmt.Fprintf(env.Stderr, "avenor: %v\n", err)
		if f.sentinelFile != "" {
			if werr := sentinel.Write(f.sentinelFile, sentinel.Record{ExitCode: exitFail, StopReason: sentinel.StopError, RunID: f.runID}); werr != nil {
				fmt.Fprintf(env.Stderr, "avenor: writing sentinel: %v\n", werr)
			}
		}
		return exitFail
	case err != nil:
		return failSetup(env, f, err)
	}
	res, err := hostrun.Start(ctx, spec)
	if err != nil {
		return failSetup(env, f, err)
	}
	code := exitWithSentinel(res, env.Stderr)
	view.Finish(liveview.Summary{StopReason: res.StopReason, ExitCode: code, SessionID: res.SessionID,
		EventLog: f.onEvent, Sentinel: f.sentinelFile})
	return code
}

// runEventLog is where the run's NDJSON goes (--on-event): stdout for "-",
// else the file (nil: none); closeEvents closes it.
func runEventLog(onEvent string, stdout io.Writer) (events io.Writer, closeEvents func(), err error) {
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
func exitWithSentinel(res hostrun.Result, stderr io.Writer) int {
	if res.SentinelErr == nil || res.ExitCode != exitOK {
		return res.ExitCode
	}
	fmt.Fprintf(stderr, "avenor: the run ended well but its sentinel was not written; exit %d\n", exitFail)
	return exitFail
}

func failSetup(env Env, f *runFlags, err error) int {
	fmt.Fprintf(env.Stderr, "avenor: %v\n", err)
	if f.sentinelFile != "" {
		writeExitSentinel(f.sentinelFile, exitFail, f.runID, env.Stderr)
	}
	return exitFail
}

// runRequest is the run's command line for host/run.
func runRequest(cmd *cobra.Command, f *runFlags, env Env) hostrun.Request {
	start := f.dir
	if !cmd.Flags().Changed("dir") {
		start = "."
	}
	return hostrun.Request{
		Start: start, Settings: settingFlags(cmd.Flags()), Prompt: f.prompt, PromptFile: f.promptFile, Stdin: env.Stdin,
		LoopFile: f.loopFile, TeamFile: f.teamFile, RosterFile: f.rosterFile, RosterEntry: f.rosterEntry,
		Resume: f.resume, RunID: f.runID, SentinelFile: f.sentinelFile, PermissionHandler: f.permissionHandler,
		OnPermission: f.onPermission, PonyConfig: f.ponyConfig, HTTPDebug: f.httpDebug,
		HTTPDebugTokenFile: f.httpDebugTokenFile, Stderr: env.Stderr,
	}
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
