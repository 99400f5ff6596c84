package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
)

// newAwaitCmd is `avenor await` (docs/cli.md#avenor-await): its flags fill
// client.AwaitCommand, whose Run waits and gives the exit code.
func newAwaitCmd(env Env) *cobra.Command {
	c := &client.AwaitCommand{}
	cmd := &cobra.Command{
		Use:   "await <run-id|label> [flags]",
		Short: "Wait until a stable runtime needs attention or is done",
		Long:  help("await"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return awaitUsage(env, "exactly one <run-id|label> is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c.SocketGiven = cmd.Flags().Changed("socket")
			if err := c.Check(); err != nil {
				return awaitUsage(env, err.Error())
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return exitError{c.Run(ctx, args[0], env.Getenv, env.Stdout, env.Stderr)}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return awaitUsage(env, err.Error()) })
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&c.Socket, "socket", "", "the supervisor's control socket (default: $AVENOR_SOCKET, else search ~/.avenor/sockets/*.sock, default.sock first)")
	fl.StringVar(&c.Until, "until", "attention", "attention (a permission gate or a terminal state) or done (terminal only)")
	fl.DurationVar(&c.Timeout, "timeout", 0, "give up after this long, exit 124 (0: wait forever)")
	fl.BoolVar(&c.PrintOutput, "print-output", false, "after a terminal state print --- and the complete final_output")
	fl.StringVar(&c.Format, "format", "plain", "plain or json")
	return cmd
}

// awaitUsage prints a usage error and exits 2 (docs/run.md#exit-codes).
func awaitUsage(env Env, msg string) error {
	fmt.Fprintf(env.Stderr, "avenor await: %s\n", msg)
	return exitError{exitUsage}
}
