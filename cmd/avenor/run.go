package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runtime"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/internal/regularfile"
)

// runFlags are the flags of `avenor run` (contract §1.2).
type runFlags struct {
	agent, prompt, promptFile, loopFile, teamFile, rosterFile, rosterEntry string
	label, dir, resume, serverURL, backend, model, thinking                string
	onEvent, sentinelFile, permissionHandler, controlSocket, httpDebug     string
	runID, ponyConfig                                                      string
	autoApprove                                                            bool
	timeout, progressTimeout, permissionClaimTimeout                       time.Duration
	maxRetries                                                             int

	// backends finds any backend a loop or team phase names (set by buildRun).
	backends func(name string) (loop.Backend, error)
	// httpDebugTokenFile receives the --http-debug token (0600), for scripts.
	httpDebugTokenFile string
}

func newRunCmd(env Env) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run one prompt through a backend (the default command)",
		Long: `Run one prompt through a backend plugin and exit with the turn's outcome.

Events go to --on-event as NDJSON (one flat JSON object per line, session.end last); the
sentinel file gets a status line, SESSION=, STOP_REASON= and RUN= once the run ends.

Exit codes: 0 end_turn, 1 error, 2 refusal (or a command line avenor cannot parse),
3 max_tokens, 4 max_turn_requests, 5 blocked, 124 timeout, 130 cancelled.

Examples:
  avenor --backend echo --prompt "hello" --on-event ev.ndjson --sentinel-file run.done
  avenor run --backend codex-app-server --prompt-file task.md --timeout 30m --max-retries 2
  avenor --backend echo --resume <session-id> --prompt "and then?"`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected argument %q (flags take a value: --prompt %q)", args[0], args[0])}
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
	fl.StringVar(&f.prompt, "prompt", "", "inline prompt (exclusive with --prompt-file)")
	fl.StringVar(&f.promptFile, "prompt-file", "", "file holding the prompt (exclusive with --prompt)")
	fl.StringVar(&f.dir, "dir", ".", "working directory of the agent")
	fl.StringVar(&f.model, "model", "", "backend-specific model id")
	fl.StringVar(&f.agent, "agent", "", "agent name")
	fl.StringVar(&f.thinking, "thinking", "", "thinking level: off|minimal|low|medium|high|xhigh|max, as the backend accepts")
	fl.StringVar(&f.resume, "resume", "", "resume an existing session by id")
	fl.StringVar(&f.label, "label", "", "free-form label, stamped as run_label on every event")
	fl.StringVar(&f.runID, "run-id", "", "correlation id stamped on every event (default: 16 random hex chars)")
	fl.StringVar(&f.onEvent, "on-event", "", "NDJSON event log, created or truncated at start")
	fl.StringVar(&f.sentinelFile, "sentinel-file", "", "completion sentinel, written once when the run ends")
	fl.DurationVar(&f.timeout, "timeout", 0, "overall wall clock, e.g. 30m (0: none); ends with exit 124")
	fl.DurationVar(&f.progressTimeout, "progress-timeout", 0, "end the turn after this long without an event (0: none); exit 124")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "extra attempts after an attempt that exits 1, resuming its session")
	fl.BoolVar(&f.autoApprove, "auto-approve", false, "approve ordinary permission requests with their first allow option")
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
	fl.StringVar(&f.ponyConfig, "pony-config", "", "config of the pony backend")
	_ = fl.MarkHidden("pony-config")
	return cmd
}

// writeUsageSentinel writes FAILED with EXIT_CODE=2 when a run's command line
// could not be parsed but a sentinel path is recognisable in it (decision 10).
func writeUsageSentinel(args []string, stderr io.Writer) {
	path := rawFlagValue(args, "sentinel-file")
	if path == "" {
		return
	}
	if err := sentinel.Write(path, sentinel.Record{ExitCode: exitUsage, StopReason: "error", RunID: rawFlagValue(args, "run-id")}); err != nil {
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

// runFailure is a validation or setup failure: exit 1 and a FAILED sentinel.
type runFailure struct{ msg string }

func (e runFailure) Error() string { return e.msg }

// runMain validates, wires the host and runs. It returns the exit code.
func runMain(cmd *cobra.Command, f *runFlags, env Env) int {
	if f.runID == "" {
		f.runID = newRunID()
	}
	opts, perms, err := buildRun(cmd, f, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor: %v\n", err)
		if f.sentinelFile != "" {
			if werr := sentinel.Write(f.sentinelFile, sentinel.Record{ExitCode: exitFail, StopReason: "error", RunID: f.runID}); werr != nil {
				fmt.Fprintf(env.Stderr, "avenor: writing sentinel: %v\n", werr)
			}
		}
		return exitFail
	}
	hostrt.CleanFiles(opts.SentinelPath, opts.PermBase, opts.Logger.Warn)

	if f.onEvent != "" {
		file, err := os.Create(f.onEvent)
		if err != nil {
			return failSetup(env, f, fmt.Errorf("--on-event: %w", err))
		}
		defer file.Close()
		opts.Events = file
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			cancel(hostrt.ErrInterrupted)
		case <-ctx.Done():
		}
	}()

	if f.loopFile != "" || f.teamFile != "" {
		return runWorkflow(ctx, cancel, f, opts, perms, env)
	}

	// The broker cancels the run on a "cancelled" answer and names the
	// current session in its .req files; both come from the runner.
	var runner *hostrt.Runner
	perms.CancelRun = func() { runner.Cancel() }
	perms.SessionID = func() string { return runner.Status().SessionID }
	broker := permission.New(perms) // the control plane answers through broker.Answer
	runner = hostrt.New(opts, hostrt.BrokerPermissions(broker))
	if f.httpDebug != "" {
		target := httpdebug.NewOneShot(runner, control.BrokerAnswerer{Broker: broker})
		dbg, err := startHTTPDebug(f.httpDebug, f.httpDebugTokenFile, httpdebug.Config{Run: target, RunID: f.runID}, env, opts.Logger)
		if err != nil {
			return failSetup(env, f, err)
		}
		defer stopHTTPDebug(dbg, target)
	}
	if f.controlSocket != "" {
		srv, err := startRunControl(f.controlSocket, runner, f.runID, control.BrokerAnswerer{Broker: broker}, nil, opts.Logger)
		if err != nil {
			return failSetup(env, f, err)
		}
		defer srv.Close()
		broker.SetControl(control.Resolver{Server: srv})
	}
	res := runner.Run(ctx)
	return res.ExitCode
}

func failSetup(env Env, f *runFlags, err error) int {
	fmt.Fprintf(env.Stderr, "avenor: %v\n", err)
	if f.sentinelFile != "" {
		_ = sentinel.Write(f.sentinelFile, sentinel.Record{ExitCode: exitFail, StopReason: "error", RunID: f.runID})
	}
	return exitFail
}

// buildRun turns flags and config into the host's options and its
// permission broker's, in the contract's validation order (§1.2).
func buildRun(cmd *cobra.Command, f *runFlags, env Env) (hostrt.Options, permission.Options, error) {
	var o hostrt.Options
	var perms permission.Options
	dirs, err := config.DefaultDirs(env.Getenv)
	if err != nil {
		return o, perms, err
	}
	start := f.dir
	if !cmd.Flags().Changed("dir") {
		start = "."
	}
	absStart, err := filepath.Abs(start)
	if err != nil {
		return o, perms, fmt.Errorf("--dir %q: %w", f.dir, err)
	}
	project, _ := config.FindProject(absStart)
	settings, prov, err := config.Load(config.Sources{
		Environ: env.Environ, Dirs: dirs, ProjectDir: project, Flags: changedSettings(cmd, f),
	})
	if err != nil {
		return o, perms, err
	}
	if err := applyRoster(cmd, f, &settings); err != nil {
		return o, perms, err
	}

	backendCfg := settings.Backends[settings.Backend]
	families := map[string]string{}
	for name, b := range settings.Backends {
		if b.Plugin != "" {
			families[name] = b.Plugin
		}
	}
	finder := plugins.NewFinder(env.Getenv, dirs.PluginDir(), families)
	if project != "" {
		// The project's pins come first: a pinned family runs exactly its
		// pinned binary, hash-checked, or fails here (issue 10).
		if finder.Lock, err = plugins.ReadLock(project); err != nil {
			return o, perms, err
		}
	}
	found, err := finder.Find(settings.Backend)
	if err != nil {
		return o, perms, plugins.UnknownBackendError(settings.Backend, err)
	}

	switch {
	case settings.Backend == "pony" && f.ponyConfig == "":
		return o, perms, errors.New("--pony-config is required for backend pony")
	case f.prompt != "" && f.promptFile != "":
		return o, perms, errors.New("--prompt and --prompt-file are mutually exclusive")
	case f.loopFile != "" && f.teamFile != "":
		return o, perms, errors.New("--loop-file and --team-file are mutually exclusive")
	case f.loopFile != "" && f.resume != "":
		return o, perms, errors.New("--loop-file and --resume are mutually exclusive")
	case f.teamFile != "" && f.resume != "":
		return o, perms, errors.New("--team-file and --resume are mutually exclusive")
	case f.prompt == "" && f.promptFile == "" && f.loopFile == "" && f.teamFile == "":
		return o, perms, errors.New("--prompt, --prompt-file, --loop-file, or --team-file is required")
	}
	if f.httpDebugTokenFile != "" && f.httpDebug == "" {
		return o, perms, errors.New("--http-debug-token-file needs --http-debug")
	}

	prompt := f.prompt
	if f.promptFile != "" {
		data, err := regularfile.ReadFile(f.promptFile)
		if err != nil {
			return o, perms, fmt.Errorf("--prompt-file: %w", err)
		}
		prompt = string(data)
	}
	dir, err := filepath.Abs(settings.Dir)
	if err != nil {
		return o, perms, fmt.Errorf("--dir %q: %w", settings.Dir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return o, perms, fmt.Errorf("--dir %q is not a directory", settings.Dir)
	}

	if perms, err = runPermissions(f, settings.AutoApprove, settings.PermissionClaimTimeout, env.Getenv); err != nil {
		return o, perms, err
	}
	permBase := "" // cleaned with the sentinel (contract §1.2.1 step 3)
	if f.sentinelFile != "" {
		permBase = perms.FileBase
		if permBase == "" {
			permBase = permission.DerivePermBase(f.sentinelFile)
		}
	}
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "avenor", Output: env.Stderr, Level: hclog.LevelFromString(orDefault(env.Getenv("AVENOR_LOG_LEVEL"), "warn")),
	})
	f.backends = backendLookup(finder, settings, dirs, logger)
	o = hostrt.Options{
		Backend: settings.Backend, Dir: dir, DirExplicit: prov["dir"] != config.LayerDefault, Prompt: prompt,
		Model: settings.Model, Agent: settings.Agent, Thinking: settings.Thinking,
		Resume: f.resume, ServerURL: settings.ServerURL, RunID: f.runID, Label: settings.Label,
		Timeout: settings.Timeout, ProgressTimeout: settings.ProgressTimeout, MaxRetries: settings.MaxRetries,
		AutoApprove: settings.AutoApprove, SentinelPath: f.sentinelFile, PermBase: permBase,
		Env: backendCfg.Env, PluginOptions: backendCfg.Options, StateDir: dirs.PluginStateDir(found.Family),
		Logger: logger, Stderr: env.Stderr,
		Launch: func(ctx context.Context) (*plugins.Launched, error) {
			return plugins.Launch(ctx, found, settings.Backend, logger)
		},
	}
	return o, perms, nil
}

// changedSettings collects the flags the user set that are config keys.
func changedSettings(cmd *cobra.Command, f *runFlags) map[string]any {
	out := map[string]any{}
	fl := cmd.Flags()
	set := func(flag, key string, v any) {
		if fl.Changed(flag) {
			out[key] = v
		}
	}
	set("backend", "backend", f.backend)
	set("model", "model", f.model)
	set("agent", "agent", f.agent)
	set("thinking", "thinking", f.thinking)
	set("dir", "dir", f.dir)
	set("timeout", "timeout", f.timeout)
	set("progress-timeout", "progress_timeout", f.progressTimeout)
	set("max-retries", "max_retries", f.maxRetries)
	set("permission-claim-timeout", "permission_claim_timeout", f.permissionClaimTimeout)
	set("auto-approve", "auto_approve", f.autoApprove)
	set("server-url", "server_url", f.serverURL)
	set("label", "label", f.label)
	return out
}

// permissionFileTimeoutEnv replaces the file handler's 10 min timeout with
// a Go duration; it exists for tests and is not part of the contract.
const permissionFileTimeoutEnv = "AVENOR_PERMISSION_FILE_TIMEOUT"

// runPermissions is the permission broker of a run: --auto-approve, the
// effective file handler (an explicit --permission-handler file:<path>
// wins; else, with --sentinel-file and without --auto-approve, the base
// derived from the sentinel) and --permission-claim-timeout.
func runPermissions(f *runFlags, auto bool, claim time.Duration, getenv func(string) string) (permission.Options, error) {
	base, err := permission.FileBase(f.permissionHandler, f.sentinelFile, auto)
	if err != nil {
		return permission.Options{}, err
	}
	o := permission.Options{AutoApprove: auto, FileBase: base, ClaimTimeout: claim}
	if v := getenv(permissionFileTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s=%q is not a positive Go duration", permissionFileTimeoutEnv, v)
		}
		o.File.Timeout = d
	}
	return o, nil
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
