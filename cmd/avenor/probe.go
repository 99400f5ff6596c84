package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// newProbeCmd is `avenor probe`: its flags fill host/run's ProbeCommand.
func newProbeCmd(env Env) *cobra.Command {
	var c hostrun.ProbeCommand
	cmd := &cobra.Command{
		Use:   "probe --out <file> [flags]",
		Short: "Run one probe prompt through opencode-acp and write its NDJSON transcript",
		Long:  help("probe"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.Out == "" {
				return usageError{errors.New("--out is required")}
			}
			return exitError{c.Run(env.resolveEnv(newLogger(env)), env.Stdout, env.Stderr)}
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Out, "out", "", "NDJSON transcript to write (required)")
	fl.StringVar(&c.Dir, "dir", ".", "working directory of the agent")
	fl.DurationVar(&c.Timeout, "timeout", 5*time.Minute, "overall wall clock")
	fl.StringVar(&c.Prompt, "prompt", hostrun.ProbePrompt, "prompt to send instead of the built-in probe prompt")
	return cmd
}
