package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/permission"
)

// newAnswerCmd is `avenor answer [flags] <perm-base>` (docs/permission-handler.md#avenor-answer).
func newAnswerCmd(env Env) *cobra.Command {
	var a permission.Answer
	var force bool
	var question string
	var answers []string
	cmd := &cobra.Command{
		Use:   "answer [flags] <perm-base>",
		Short: "Answer a permission request waiting in <perm-base>.req, or a question in <perm-base>.question",
		Long:  help("answer"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if question != "" || c.Flags().Changed("answer") {
				if question == "" {
					fmt.Fprintln(env.Stderr, "avenor answer: --answer needs --question <request-id>")
					return exitError{2}
				}
				return exitError{permission.QuestionAnswerCommand(args, question, answers, force, env.Stderr)}
			}
			return exitError{permission.AnswerCommand(args, a, force, env.Stderr)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&a.OptionID, "option", "", "the optionId to select (required; one of the request's options)")
	fl.StringVar(&a.Message, "message", "", "a note relayed to the backend")
	fl.StringVar(&a.Outcome, "outcome", "selected", "selected, or cancelled to cancel the run")
	fl.BoolVar(&force, "force", false, "overwrite an existing response")
	fl.StringVar(&question, "question", "", "answer the question with this request_id (waiting in <perm-base>.question) instead of a permission")
	fl.StringArrayVar(&answers, "answer", nil, "with --question: the answer to one prompt, once per prompt in order (a JSON array of strings for a multi choice)")
	return cmd
}
