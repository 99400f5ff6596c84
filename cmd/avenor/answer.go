package main

import (
	"errors"
	"fmt"
	"io"

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
			return exitError{runAnswer(args, a, force, env.Stderr)}
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

// runAnswer validates the command line, writes the response and returns the
// exit code.
func runAnswer(args []string, a permission.Answer, force bool, stderr io.Writer) int {
	fail := func(code int, format string, v ...any) int {
		fmt.Fprintf(stderr, "avenor answer: "+format+"\n", v...)
		return code
	}
	switch {
	case len(args) != 1:
		return fail(exitUsage, "expected one <perm-base> argument, got %d", len(args))
	case a.OptionID == "":
		return fail(exitUsage, "--option is required")
	case a.Outcome != "selected" && a.Outcome != "cancelled":
		return fail(exitUsage, "--outcome must be selected or cancelled, got %q", a.Outcome)
	}
	if _, err := permission.WriteAnswer(args[0], a, force); err != nil {
		if errors.Is(err, permission.ErrInvalid) {
			return fail(exitUsage, "%v", err)
		}
		return fail(exitFail, "%v", err)
	}
	return exitOK
}
