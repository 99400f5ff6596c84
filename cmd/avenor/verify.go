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
		Long: `Load and validate loop, team and roster configs as a run would, without starting any
backend: strict JSON (unknown fields are errors), the phase rules, prompt files and
templates, roster entries; loop_file and team_file phases are followed recursively.

Errors go to stderr first, one "error: <what>" line each, then one "ok: <what>" line per
config that is fine goes to stdout:

  ok: roster <path> (N entries)
  ok: roster <path>: entry "x" found
  ok: loop <path> (N phases, max_iterations=M)
  ok: team <path> (N phases)

Relative paths are resolved against --dir. Exit 1 on any error.

Examples:
  avenor verify --loop-file loop.json
  avenor verify --dir repo --team-file team.json --roster-file roster.json
  avenor verify --roster-file roster.json --roster-entry reviewer`,
		Args: noArgs(func(arg string) error { return usageError{fmt.Errorf("verify takes no arguments, got %q", arg)} }),
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
	if req.RosterEntry != "" && req.RosterFile == "" {
		fmt.Fprintln(env.Stderr, "avenor verify: --roster-entry requires --roster-file")
		return exitFail
	}
	if req.LoopFile == "" && req.TeamFile == "" && req.RosterFile == "" {
		fmt.Fprintln(env.Stderr, "avenor verify: at least one of --loop-file, --team-file, or --roster-file is required")
		return exitFail
	}
	oks, errs := loop.Verify(req)
	for _, e := range errs {
		fmt.Fprintf(env.Stderr, "error: %s\n", e)
	}
	for _, o := range oks {
		fmt.Fprintf(env.Stdout, "ok: %s\n", o)
	}
	if len(errs) > 0 {
		return exitFail
	}
	return exitOK
}
