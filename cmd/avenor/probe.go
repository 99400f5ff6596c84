package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/internal/regularfile"
)

func newProbeCmd(env Env) *cobra.Command {
	var out, dir, prompt string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe --out <file> [flags]",
		Short: "Run one probe prompt through opencode-acp and write its NDJSON transcript",
		Long:  help("probe"),
		Args:  cobra.NoArgs,
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
	fl.StringVar(&prompt, "prompt", hostrun.ProbePrompt, "prompt to send instead of the built-in probe prompt")
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
	logger := env.newLogger()
	probe, err := hostrun.NewProbe(env.resolveEnv(logger), absDir)
	if err != nil {
		return fail(err)
	}
	// The transcript is an event log a harness reads: refused, as
	// --on-event's is, when it is a pipe, a device or a planted symlink.
	file, err := regularfile.CreateLog(out)
	if err != nil {
		return fail(fmt.Errorf("--out: %w", err))
	}
	defer file.Close()

	ctx, stop := interruptible()
	defer stop()
	res := probe.Run(ctx, hostrun.ProbeSpec{Prompt: prompt, RunID: newRunID(), Timeout: timeout,
		Events: file, Logger: logger, Stderr: env.Stderr})
	fmt.Fprintf(env.Stdout, "probe: %s ended with %s (exit %d); transcript in %s\n", hostrun.ProbeBackend, res.StopReason, res.ExitCode, out)
	return res.ExitCode
}
