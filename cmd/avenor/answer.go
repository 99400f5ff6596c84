package main

import (
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/permission"
)

// newAnswerCmd is `avenor answer [flags] <perm-base>` (docs/permission-handler.md#avenor-answer).
func newAnswerCmd(env Env) *cobra.Command {
	var a permission.Answer
	var force bool
	cmd := &cobra.Command{
		Use:   "answer [flags] <perm-base>",
		Short: "Answer a permission request waiting in <perm-base>.req",
		Long:  help("answer"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			return exitError{permission.AnswerCommand(args, a, force, env.Stderr)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&a.OptionID, "option", "", "the optionId to select (required; one of the request's options)")
	fl.StringVar(&a.Message, "message", "", "a note relayed to the backend")
	fl.StringVar(&a.Outcome, "outcome", "selected", "selected, or cancelled to cancel the run")
	fl.BoolVar(&force, "force", false, "overwrite an existing response")
	return cmd
}
