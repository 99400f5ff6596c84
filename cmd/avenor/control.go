package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
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
	for _, s := range client.ControlCommands {
		cmd.AddCommand(newControlSimpleCmd(env, s, sock))
	}
	cmd.AddCommand(newControlTailCmd(env, sock), newControlSpawnCmd(env, sock), newControlWaitCapacityCmd(env, sock))
	for _, c := range cmd.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return controlUsage(env, err.Error()) })
	}
	return cmd
}

// newControlSimpleCmd is the command of s; list has its --json and --warm.
func newControlSimpleCmd(env Env, s client.ControlCommand, sock func() (string, error)) *cobra.Command {
	var listJSON, listWarm bool
	name := s.Name()
	sub := &cobra.Command{
		Use: s.Use, Short: s.Short,
		Args: func(_ *cobra.Command, args []string) error {
			if err := s.CheckArgs(args); err != nil {
				return controlUsage(env, err.Error())
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			params, err := s.Params(args)
			if err != nil {
				return controlUsage(env, err.Error())
			}
			if name == "list" && listWarm {
				params = map[string]any{"warm": true}
			}
			raw, err := s.Call(path, params, controlCallTimeout)
			switch {
			case err != nil:
				return controlFail(env, name, err)
			case s.Done != "":
				fmt.Fprintln(env.Stdout, s.Done)
				return nil
			case name == "list" && !listJSON && !listWarm && stdoutIsTerminal(env):
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
		sub.Long = help("control-list")
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
	if err := client.WriteIndented(env.Stdout, raw); err != nil {
		return controlFail(env, cmd, err)
	}
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
			fl := c.Flags()
			f.MaxRetriesGiven, f.AllowedToolsGiven, f.WatchdogRestartsGiven = fl.Changed("max-retries"), fl.Changed("allowed-tools"), fl.Changed("watchdog-restarts")
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
	fl.StringArrayVar(&f.P.Images, "image", nil, "an image file sent with the prompt (repeatable; refused by backends without native image input)")
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
	fl.StringVar(&f.P.PermissionMode, "permission-mode", "", "default, accept-edits, plan or full-access")
	fl.StringVar(&f.P.AppendSystemPrompt, "append-system-prompt", "", "standing instructions: TEXT or @FILE")
	fl.StringVar(&f.AllowedTools, "allowed-tools", "", `exact tool list "a,b" in the runtime's names; "" allows none`)
	fl.StringVar(&f.P.MCPConfig, "mcp-config", "", "MCP server definitions (JSON file)")
	fl.StringVar(&f.ProgressTimeout, "progress-timeout", "", "no event this long: the turn is hung (seconds or a Go duration)")
	fl.StringVar(&f.ToolTimeout, "tool-timeout", "", "a tool call idle this long is hung (needs --watchdog)")
	fl.StringVar(&f.P.Watchdog, "watchdog", "", "on a hung turn or tool: warn, cancel or restart")
	fl.IntVar(&f.WatchdogRestarts, "watchdog-restarts", 0, "with --watchdog restart: the most restarts")
	f.RegisterSandbox(fl)
	f.RateLimit.Register(fl)
	f.Context.Register(fl)
	return cmd
}
