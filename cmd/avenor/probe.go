package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runtime"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// probeBackend is the only backend `avenor probe` drives (contract §1.7).
const probeBackend = "opencode-acp"

// ProbePrompt is the built-in prompt of `avenor probe`: it asks for a tool
// that needs permission, which the probe rejects, so one run shows the
// whole exchange (tool call, permission request and answer, turn end) and
// changes nothing on disk.
const ProbePrompt = "Use the shell tool to run `echo avenor-probe > avenor-probe.txt`. " +
	"If the tool is not allowed, say so in one short sentence and stop."

func newProbeCmd(env Env) *cobra.Command {
	var out, dir, prompt string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe --out <file> [flags]",
		Short: "Run one probe prompt through opencode-acp and write its NDJSON transcript",
		Long: `Run one prompt through the opencode-acp backend (` + "`opencode acp --pure --log-level WARN --cwd <dir>`" + `)
and write every event, down to the final session.end, to --out as NDJSON that
'avenor watch' reads. Permission requests are answered automatically with the
first option whose kind starts with "reject" (else the first option), so the
probe never lets the agent change anything.

Exit codes are those of 'avenor run' (0 end_turn, 1 error, 124 timeout, 130 cancelled…).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{errors.New("--out is required")}
			}
			return exitError{probeMain(env, out, dir, prompt, timeout)}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "NDJSON transcript to write (required)")
	fl.StringVar(&dir, "dir", ".", "working directory of the agent")
	fl.DurationVar(&timeout, "timeout", 5*time.Minute, "overall wall clock")
	fl.StringVar(&prompt, "prompt", ProbePrompt, "prompt to send instead of the built-in probe prompt")
	return cmd
}

func probeMain(env Env, out, dir, prompt string, timeout time.Duration) int {
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "avenor probe: %v\n", err)
		return exitFail
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fail(fmt.Errorf("--dir %q: %w", dir, err))
	}
	if st, err := os.Stat(absDir); err != nil || !st.IsDir() {
		return fail(fmt.Errorf("--dir %q is not a directory", dir))
	}
	dirs, err := config.DefaultDirs(env.Getenv)
	if err != nil {
		return fail(err)
	}
	project, _ := config.FindProject(absDir)
	settings, _, err := config.Load(config.Sources{Environ: env.Environ, Dirs: dirs, ProjectDir: project})
	if err != nil {
		return fail(err)
	}
	backendCfg := settings.Backends[probeBackend]
	families := map[string]string{}
	if backendCfg.Plugin != "" {
		families[probeBackend] = backendCfg.Plugin
	}
	finder := plugins.NewFinder(env.Getenv, dirs.PluginDir(), families)
	if project != "" {
		if finder.Lock, err = plugins.ReadLock(project); err != nil {
			return fail(err)
		}
	}
	found, err := finder.Find(probeBackend)
	if err != nil {
		return fail(err)
	}
	file, err := os.Create(out)
	if err != nil {
		return fail(fmt.Errorf("--out: %w", err))
	}
	defer file.Close()

	logger := hclog.New(&hclog.LoggerOptions{
		Name: "avenor", Output: env.Stderr, Level: hclog.LevelFromString(orDefault(env.Getenv("AVENOR_LOG_LEVEL"), "warn")),
	})
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
	runner := hostrt.New(hostrt.Options{
		Backend: probeBackend, Dir: absDir, Prompt: prompt, RunID: newRunID(), Timeout: timeout,
		Events: file, Env: backendCfg.Env, PluginOptions: backendCfg.Options, StateDir: dirs.PluginStateDir(found.Family),
		Logger: logger, Stderr: env.Stderr,
		Launch: func(ctx context.Context) (*plugins.Launched, error) {
			return plugins.Launch(ctx, found, probeBackend, logger)
		},
	}, func(string) hostrt.Permissions { return rejectFirst{} })
	res := runner.Run(ctx)
	fmt.Fprintf(env.Stdout, "probe: %s ended with %s (exit %d); transcript in %s\n", probeBackend, res.StopReason, res.ExitCode, out)
	return res.ExitCode
}

// rejectFirst answers every permission request at once with the first
// option whose kind starts with "reject", else the first option (contract
// §1.7), recording the request and the answer as a run would.
type rejectFirst struct{}

func (rejectFirst) Record(_ context.Context, req sdk.PermissionRequest, emit func(event.Event)) func(context.Context) (sdk.PermissionDecision, error) {
	emit(permission.RequestEvent(req, permission.ResolverAutomatic))
	if len(req.Options) == 0 {
		d := sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}
		return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
	}
	opt := req.Options[0]
	for _, o := range req.Options {
		if strings.HasPrefix(strings.ToLower(o.Kind), "reject") {
			opt = o
			break
		}
	}
	emit(permission.ResponseEvent(req.ID, opt.ID, opt.Kind, permission.SourceAvenor))
	d := sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: opt.ID, Kind: sdk.DecisionKind(opt.Kind)}
	return func(context.Context) (sdk.PermissionDecision, error) { return d, nil }
}
