package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
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

// awaitRun finds the runtime, waits on it (client.Await) and prints what
// ended the wait.
func awaitRun(ctx context.Context, f *awaitFlags, name string, env Env) (int, error) {
	socks, err := awaitSockets(f, env)
	if err != nil {
		return 0, err
	}
	warn := func(msg string) { fmt.Fprintf(env.Stderr, "avenor await: %s\n", msg) }
	c, rt, err := client.FindRuntime(ctx, socks, name, warn)
	var nr *client.NoRuntimeError
	if errors.As(err, &nr) && len(socks) == 1 && nr.LastErr != nil {
		return 0, nr.LastErr
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	line := func(plain string, js map[string]any) {
		if f.format == "json" {
			b, _ := json.Marshal(js)
			fmt.Fprintln(env.Stdout, string(b))
			return
		}
		fmt.Fprintln(env.Stdout, plain)
	}
	out, err := c.Await(ctx, rt.RuntimeID, client.AwaitOptions{Until: f.until, FinalOutput: f.printOutput,
		OnTurnDone: func(id string) {
			line(fmt.Sprintf("TURN-DONE %s", id), map[string]any{"event": "turn_done", "runtime_id": id})
		}})
	if err != nil {
		return 0, err
	}
	if out.Attention != "" {
		line(fmt.Sprintf("ATTENTION permission %s %s", out.RuntimeID, out.Summary),
			map[string]any{"event": "attention", "kind": "permission", "runtime_id": out.RuntimeID, "summary": out.Summary})
		return awaitPermission, nil
	}
	plain := fmt.Sprintf("END %s %s", out.Phase, out.RuntimeID)
	js := map[string]any{"event": "end", "phase": out.Phase, "runtime_id": out.RuntimeID}
	if out.Reason != "" {
		plain += " " + out.Reason.String()
		js["reason"] = out.Reason.String()
	}
	line(plain, js)
	if f.printOutput {
		if f.format == "json" {
			line("", map[string]any{"final_output": out.FinalOutput})
		} else {
			fmt.Fprintln(env.Stdout, "---")
			fmt.Fprintln(env.Stdout, out.FinalOutput)
		}
	}
	switch out.Phase {
	case client.PhaseDone:
		return awaitDone, nil
	case client.PhaseTimeout:
		return awaitTimeout, nil
	case client.PhaseKilled:
		return awaitKilled, nil
	}
	return awaitFailed, nil
}

// awaitSockets is --socket, else every ~/.avenor/sockets/*.sock, sorted.
func awaitSockets(f *awaitFlags, env Env) ([]string, error) {
	if f.socketGiven {
		if f.socket == "" {
			return nil, errors.New("--socket is required")
		}
		return []string{f.socket}, nil
	}
	// docs/cli.md#avenor-control: AVENOR_SOCKET names the one socket.
	if p := env.Getenv(client.SocketEnv); p != "" {
		return []string{p}, nil
	}
	home := env.Getenv("HOME")
	if home == "" {
		return nil, errors.New("--socket is not given and $HOME is not set to search ~/.avenor/sockets")
	}
	found, _ := filepath.Glob(filepath.Join(home, ".avenor", "sockets", "*.sock"))
	if len(found) == 0 {
		return nil, fmt.Errorf("no supervisor socket in %s; pass --socket", filepath.Join(home, ".avenor", "sockets"))
	}
	// The default socket first: `avenor stable` without --control-socket
	// listens there.
	sort.Strings(found)
	def := client.DefaultSocketPath(home)
	if i := slices.Index(found, def); i > 0 {
		found = append(append([]string{def}, found[:i]...), found[i+1:]...)
	}
	return found, nil
}
