package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/stable"
	"github.com/avenor-go/avenor/internal/nearest"
)

// controlCallTimeout bounds one call of `avenor control` (tail excepted).
const controlCallTimeout = 30 * time.Second

// newControlCmd is `avenor control --socket <path> <command> [args]`
// (docs/cli.md#avenor-control).
func newControlCmd(env Env) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "control --socket <path> <command> [args]",
		Short: "Talk to a running avenor through its control socket",
		Long:  help("control"),
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return controlUsage(env, "a command is required (status, list, tail, spawn, cancel, prompt, interrupt-and-prompt, answer-permission, shutdown, tree_budget, wait-for-capacity)")
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if near, ok := nearest.Name(args[0], commandNames(c)); ok {
				msg += "; did you mean " + near + "?"
			}
			return controlUsage(env, msg)
		},
	}
	cmd.PersistentFlags().StringVar(&socket, "socket", "", "the control socket (default: $AVENOR_SOCKET, else ~/.avenor/sockets/default.sock)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return controlUsage(env, err.Error()) })

	sock := func() (string, error) {
		if !cmd.PersistentFlags().Lookup("socket").Changed {
			// docs/cli.md#avenor-control: AVENOR_SOCKET, else the default socket.
			p, err := client.ResolveSocket(env.Getenv)
			if err != nil {
				return "", controlUsage(env, err.Error())
			}
			return p, nil
		}
		if socket == "" {
			return "", controlUsage(env, "--socket is required")
		}
		return socket, nil
	}
	for _, s := range controlSimples(env) {
		cmd.AddCommand(newControlSimpleCmd(env, s, sock))
	}
	cmd.AddCommand(newControlTailCmd(env, sock), newControlSpawnCmd(env, sock), newControlWaitCapacityCmd(env, sock))
	for _, c := range cmd.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return controlUsage(env, err.Error()) })
	}
	return cmd
}

// controlSimple is a control command of one RPC whose answer is printed as
// JSON or as a fixed word (done).
type controlSimple struct {
	use, rpc, short, done string
	min, max              int
	params                func(args []string) (map[string]any, error)
}

// controlSimples are the control commands of one RPC.
func controlSimples(env Env) []controlSimple {
	optRuntime := func(i int) func([]string) (map[string]any, error) {
		return func(args []string) (map[string]any, error) {
			p := map[string]any{}
			if len(args) > i {
				p["runtime_id"] = args[i]
			}
			return p, nil
		}
	}
	none := func([]string) (map[string]any, error) { return nil, nil }
	return []controlSimple{
		{use: "status [runtime-id]", rpc: "status", short: "print the status snapshot", max: 1, params: optRuntime(0)},
		{use: "list", rpc: "list", short: "list the supervisor's runtimes", params: none},
		{use: "cancel [runtime-id]", rpc: "cancel", short: "cancel the run (exit 130)", done: "cancelled", max: 1, params: optRuntime(0)},
		{use: "prompt <text> [runtime-id]", rpc: "prompt", short: "queue a prompt after the current turn", done: "prompt queued", min: 1, max: 2,
			params: func(a []string) (map[string]any, error) {
				p, _ := optRuntime(1)(a)
				p["text"] = a[0]
				return p, nil
			}},
		{use: "interrupt-and-prompt <text> [runtime-id]", rpc: "interrupt_and_prompt", short: "cancel the turn in flight and continue with text", done: "interrupt queued", min: 1, max: 2,
			params: func(a []string) (map[string]any, error) {
				p, _ := optRuntime(1)(a)
				p["text"] = a[0]
				p["keep_queue"] = false
				return p, nil
			}},
		{use: "answer-permission <request-id> <option-id> [runtime-id]", rpc: "answer_permission", short: "answer the pending permission request", done: "permission answered", min: 2, max: 3,
			params: func(a []string) (map[string]any, error) {
				p, _ := optRuntime(2)(a)
				p["request_id"], p["option_id"] = a[0], a[1]
				return p, nil
			}},
		{use: "shutdown [graceful|kill|immediate]", rpc: "shutdown", short: "stop the supervisor", done: "shutting down", max: 1,
			params: func(a []string) (map[string]any, error) {
				mode := "graceful"
				if len(a) > 0 {
					mode = a[0]
				}
				switch mode {
				case "graceful", "kill", "immediate":
				default:
					return nil, controlUsage(env, fmt.Sprintf("shutdown: unknown mode %q (graceful, kill or immediate)", mode))
				}
				return map[string]any{"mode": mode}, nil
			}},
		{use: "tree_budget", rpc: "tree_budget", short: "print the tree budget", params: none},
	}
}

// newControlSimpleCmd is the command of s; list has its --json and --warm.
func newControlSimpleCmd(env Env, s controlSimple, sock func() (string, error)) *cobra.Command {
	var listJSON, listWarm bool
	name := strings.Fields(s.use)[0]
	sub := &cobra.Command{
		Use: s.use, Short: s.short,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < s.min || len(args) > s.max {
				return controlUsage(env, fmt.Sprintf("%s: usage: avenor control --socket <path> %s", name, s.use))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			params, err := s.params(args)
			if err != nil {
				return err
			}
			if name == "list" && listWarm {
				params = map[string]any{"warm": true}
			}
			var p any // none: no params at all, not null
			if params != nil {
				p = params
			}
			var raw json.RawMessage
			if err := client.CallOnce(path, s.rpc, p, &raw, controlCallTimeout); err != nil {
				return controlFail(env, name, err)
			}
			if s.done != "" {
				fmt.Fprintln(env.Stdout, s.done)
				return nil
			}
			if name == "list" && !listJSON && !listWarm && stdoutIsTerminal(env) {
				if err := liveview.WriteRuntimeTable(env.Stdout, raw, time.Now()); err != nil {
					return controlFail(env, name, err)
				}
				return nil
			}
			return printIndented(env, name, raw)
		},
	}
	if name == "list" {
		sub.Flags().BoolVar(&listJSON, "json", false, "print JSON even on a terminal (the default when stdout is not one)")
		sub.Flags().BoolVar(&listWarm, "warm", false, "list the warm pools' ready runtimes (avenor stable --warm) instead, as JSON")
		sub.Long = "List the supervisor's runtimes: a table on a terminal (id, label, backend, status, phase, age,\ntokens, pending permission), JSON with --json or when stdout is not a terminal."
		sub.Example = "  avenor control --socket /tmp/stable.sock list\n  avenor control --socket /tmp/stable.sock list --json | jq -r '.[].runtime_id'"
	}
	return sub
}

// controlUsage prints a usage error and exits 2 (docs/run.md#exit-codes).
func controlUsage(env Env, msg string) error {
	fmt.Fprintf(env.Stderr, "avenor control: %s\n", msg)
	return exitError{exitUsage}
}

// controlFail prints `avenor control: <cmd>: <err>` and exits 1.
func controlFail(env Env, cmd string, err error) error {
	fmt.Fprintf(env.Stderr, "avenor control: %s: %v\n", cmd, err)
	return exitError{exitFail}
}

func printIndented(env Env, cmd string, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return controlFail(env, cmd, fmt.Errorf("the server's answer is not JSON: %w", err))
	}
	buf.WriteByte('\n')
	_, _ = env.Stdout.Write(buf.Bytes())
	return nil
}

// newControlTailCmd prints every event as its raw JSON line until the server
// goes away (exit 0) or the user interrupts.
func newControlTailCmd(env Env, sock func() (string, error)) *cobra.Command {
	return &cobra.Command{
		Use: "tail", Short: "print every event, one JSON object per line",
		Args: noArgs(func(string) error { return controlUsage(env, "tail: takes no arguments") }),
		RunE: func(_ *cobra.Command, _ []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := client.Tail(ctx, path, env.Stdout); err != nil {
				return controlFail(env, "tail", err)
			}
			return nil
		},
	}
}

// exitNoCapacity is wait-for-capacity's exit code when its timeout passed
// with the supervisor still full: 124, as timeout(1) and avenor await.
const exitNoCapacity = 124

// newControlWaitCapacityCmd is `avenor control wait-for-capacity [--timeout
// D]`: wait_for_capacity, its answer printed as indented JSON; exit 0 when a
// spawn would be admitted, 124 when D passed first.
func newControlWaitCapacityCmd(env Env, sock func() (string, error)) *cobra.Command {
	var timeout string
	cmd := &cobra.Command{
		Use: "wait-for-capacity [--timeout D]", Short: "wait until a spawn would be admitted (stable)",
		Args: noArgs(func(arg string) error {
			return controlUsage(env, fmt.Sprintf("wait-for-capacity: unexpected argument %q", arg))
		}),
		RunE: func(_ *cobra.Command, _ []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			param, wait, err := client.ParseWait(timeout, stable.MaxCapacityWait)
			if err != nil {
				return controlUsage(env, "wait-for-capacity: "+err.Error())
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			st, err := client.WaitForCapacityOnce(ctx, path, param, wait, controlCallTimeout)
			if err != nil {
				return controlFail(env, "wait-for-capacity", err)
			}
			if err := printIndented(env, "wait-for-capacity", st.Raw); err != nil {
				return err
			}
			if !st.Available {
				return exitError{exitNoCapacity}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&timeout, "timeout", "", "give up after this long: seconds (60) or a Go duration (1m); default and most "+stable.MaxCapacityWait.String())
	return cmd
}

func newControlSpawnCmd(env Env, sock func() (string, error)) *cobra.Command {
	f := &client.SpawnFlags{}
	cmd := &cobra.Command{
		Use: "spawn [flags]", Short: "start a runtime in a stable supervisor",
		Args: noArgs(func(arg string) error { return controlUsage(env, fmt.Sprintf("spawn: unexpected argument %q", arg)) }),
		RunE: func(c *cobra.Command, _ []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			f.MaxRetriesGiven = c.Flags().Changed("max-retries")
			params, err := f.Params()
			if err != nil {
				return controlUsage(env, "spawn: "+err.Error())
			}
			var raw json.RawMessage
			if err := client.CallOnce(path, "spawn", params, &raw, controlCallTimeout); err != nil {
				return controlFail(env, "spawn", err)
			}
			return printIndented(env, "spawn", raw)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.P.Prompt, "prompt", "", "inline prompt")
	fl.StringVar(&f.P.PromptFile, "prompt-file", "", "file holding the prompt")
	fl.StringVar(&f.P.Dir, "dir", "", "working directory of the agent")
	fl.StringVar(&f.P.Agent, "agent", "", "agent name")
	fl.StringVar(&f.P.Label, "label", "", "label, stamped as run_label")
	fl.StringVar(&f.P.Model, "model", "", "backend-specific model id")
	fl.StringVar(&f.P.Thinking, "thinking", "", "thinking level")
	fl.StringVar(&f.P.Backend, "backend", "", "backend")
	fl.StringVar(&f.P.ServerURL, "server-url", "", "external runtime server")
	fl.StringVar(&f.P.OnEvent, "on-event", "", "NDJSON event log of the runtime")
	fl.StringVar(&f.P.SentinelFile, "sentinel-file", "", "completion sentinel of the runtime")
	fl.StringVar(&f.P.PermissionHandler, "permission-handler", "", "file:<base> permission file protocol")
	fl.BoolVar(&f.AutoApprove, "auto-approve", false, "approve ordinary permission requests")
	fl.StringVar(&f.Timeout, "timeout", "", "wall clock: seconds (600) or a Go duration (10m)")
	fl.IntVar(&f.MaxRetries, "max-retries", 0, "extra attempts after an attempt that exits 1")
	fl.StringVar(&f.P.RosterFile, "roster-file", "", "roster file")
	fl.StringVar(&f.P.RosterEntry, "roster-entry", "", "entry of --roster-file")
	fl.StringVar(&f.P.LoopFile, "loop-file", "", "phase loop config")
	fl.StringVar(&f.P.TeamFile, "team-file", "", "team config")
	return cmd
}
