package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/loop"
)

// newVerifyCmd is `avenor verify` (docs/loop.md#avenor-verify).
func newVerifyCmd(env Env) *cobra.Command {
	var req loop.VerifyRequest
	cmd := &cobra.Command{
		Use:   "verify [flags]",
		Short: "Check loop, team and roster configs without running anything",
		Long:  help("verify"),
		Args:  noArgs(func(arg string) error { return usageError{fmt.Errorf("verify takes no arguments, got %q", arg)} }),
		RunE: func(*cobra.Command, []string) error {
			return exitError{runVerify(env, req)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&req.Dir, "dir", ".", "base directory of relative paths")
	fl.StringVar(&req.LoopFile, "loop-file", "", "loop config to check")
	fl.StringVar(&req.TeamFile, "team-file", "", "team config to check")
	fl.StringVar(&req.RosterFile, "roster-file", "", "roster to check; also the fallback roster of the loop and team configs")
	fl.StringVar(&req.RosterEntry, "roster-entry", "", "entry that must be in --roster-file")
	return cmd
}

func runVerify(env Env, req loop.VerifyRequest) int {
	if err := req.Check(); err != nil {
		fmt.Fprintf(env.Stderr, "avenor verify: %v\n", err)
		return exitFail
	}
	if !loop.VerifyTo(req, env.Stdout, env.Stderr) {
		return exitFail
	}
	return exitOK
}
