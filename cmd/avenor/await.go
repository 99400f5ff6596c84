package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
)

// Exit codes of avenor await (docs/cli.md#avenor-await).
const (
	awaitDone       = 0
	awaitFailed     = 10
	awaitTimeout    = 11
	awaitKilled     = 12
	awaitPermission = 20
	awaitElapsed    = 124
)

type awaitFlags struct {
	socket, until, format string
	socketGiven           bool // --socket was on the command line, maybe empty
	timeout               time.Duration
	printOutput           bool
}

func newAwaitCmd(env Env) *cobra.Command {
	f := &awaitFlags{}
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
			f.socketGiven = cmd.Flags().Changed("socket")
			switch {
			case f.until != "attention" && f.until != "done":
				return awaitUsage(env, fmt.Sprintf("--until %q: attention or done", f.until))
			case f.format != "plain" && f.format != "json":
				return awaitUsage(env, fmt.Sprintf("--format %q: plain or json", f.format))
			case f.timeout < 0:
				return awaitUsage(env, "--timeout must not be negative")
			}
			return exitError{awaitMain(cmd.Context(), f, args[0], env)}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return awaitUsage(env, err.Error()) })
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.socket, "socket", "", "the supervisor's control socket (default: $AVENOR_SOCKET, else search ~/.avenor/sockets/*.sock, default.sock first)")
	fl.StringVar(&f.until, "until", "attention", "attention (a permission gate or a terminal state) or done (terminal only)")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long, exit 124 (0: wait forever)")
	fl.BoolVar(&f.printOutput, "print-output", false, "after a terminal state print --- and the complete final_output")
	fl.StringVar(&f.format, "format", "plain", "plain or json")
	return cmd
}

// awaitUsage prints a usage error and exits 2 (docs/run.md#exit-codes).
func awaitUsage(env Env, msg string) error {
	fmt.Fprintf(env.Stderr, "avenor await: %s\n", msg)
	return exitError{exitUsage}
}

// errElapsed is await's own --timeout.
var errElapsed = errors.New("timeout elapsed")

func awaitMain(parent context.Context, f *awaitFlags, name string, env Env) int {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, errElapsed)
		defer cancel()
	}
	code, err := awaitRun(ctx, f, name, env)
	if err != nil {
		if errors.Is(context.Cause(ctx), errElapsed) {
			fmt.Fprintln(env.Stderr, "avenor await: timeout elapsed")
			return awaitElapsed
		}
		fmt.Fprintf(env.Stderr, "avenor await: %v\n", err)
		return exitUsage
	}
	return code
}

// awaitRun waits as client.AwaitPrinter does and maps what ended the wait
// to await's exit code.
func awaitRun(ctx context.Context, f *awaitFlags, name string, env Env) (int, error) {
	socks, err := client.AwaitSockets(f.socket, f.socketGiven, env.Getenv)
	if err != nil {
		return 0, err
	}
	warn := func(msg string) { fmt.Fprintf(env.Stderr, "avenor await: %s\n", msg) }
	p := client.AwaitPrinter{Out: env.Stdout, JSON: f.format == "json", FinalOutput: f.printOutput}
	out, err := p.Await(ctx, socks, name, f.until, warn)
	switch {
	case err != nil:
		return 0, err
	case out.Attention != "":
		return awaitPermission, nil
	case out.Phase == client.PhaseDone:
		return awaitDone, nil
	case out.Phase == client.PhaseTimeout:
		return awaitTimeout, nil
	case out.Phase == client.PhaseKilled:
		return awaitKilled, nil
	}
	return awaitFailed, nil
}
