package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/control"
	hostrt "github.com/avenor-go/avenor/host/runtime"
)

// controlCallTimeout bounds one call of `avenor control` (tail excepted).
const controlCallTimeout = 30 * time.Second

// newControlCmd is `avenor control --socket <path> <command> [args]`
// (contract §1.4).
func newControlCmd(env Env) *cobra.Command {
	var socket string
	cmd := &cobra.Command{
		Use:   "control --socket <path> <command> [args]",
		Short: "Talk to a running avenor through its control socket",
		Long: `Send one control-protocol request to an avenor started with --control-socket
(avenor run) or an avenor stable supervisor, and print the answer.

Commands:
  status [runtime-id]                                  indented JSON snapshot
  list                                                 indented JSON array (stable)
  tail                                                 one event JSON per line, until the server goes away
  spawn [flags]                                        indented JSON result (stable)
  cancel [runtime-id]                                  prints "cancelled"
  prompt <text> [runtime-id]                           prints "prompt queued"
  interrupt-and-prompt <text> [runtime-id]             prints "interrupt queued"
  answer-permission <request-id> <option-id> [runtime-id]  prints "permission answered"
  shutdown [graceful|kill|immediate]                   prints "shutting down" (stable)
  tree_budget                                          indented JSON (stable)

Usage errors exit 2; other failures print "avenor control: <command>: <error>" and exit 1.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return controlUsage(env, "a command is required (status, list, tail, spawn, cancel, prompt, interrupt-and-prompt, answer-permission, shutdown, tree_budget)")
			}
			return controlUsage(env, fmt.Sprintf("unknown command %q", args[0]))
		},
	}
	cmd.PersistentFlags().StringVar(&socket, "socket", "", "the control socket (required)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return controlUsage(env, err.Error()) })

	sock := func() (string, error) {
		if socket == "" {
			return "", controlUsage(env, "--socket is required")
		}
		return socket, nil
	}
	// simple is a command of one RPC whose answer is printed as JSON or as
	// a fixed word.
	type simple struct {
		use, rpc, short, done string
		min, max              int
		params                func(args []string) (map[string]any, error)
	}
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
	simples := []simple{
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
	for _, s := range simples {
		name := strings.Fields(s.use)[0]
		cmd.AddCommand(&cobra.Command{
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
				var raw json.RawMessage
				if err := controlCall(path, s.rpc, params, &raw); err != nil {
					return controlFail(env, name, err)
				}
				if s.done != "" {
					fmt.Fprintln(env.Stdout, s.done)
					return nil
				}
				return printIndented(env, name, raw)
			},
		})
	}
	cmd.AddCommand(newControlTailCmd(env, sock), newControlSpawnCmd(env, sock))
	for _, c := range cmd.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return controlUsage(env, err.Error()) })
	}
	return cmd
}

// controlUsage prints a usage error and exits 2 (decision 9).
func controlUsage(env Env, msg string) error {
	fmt.Fprintf(env.Stderr, "avenor control: %s\n", msg)
	return exitError{exitUsage}
}

// controlFail prints `avenor control: <cmd>: <err>` and exits 1.
func controlFail(env Env, cmd string, err error) error {
	fmt.Fprintf(env.Stderr, "avenor control: %s: %v\n", cmd, err)
	return exitError{exitFail}
}

func controlCall(path, method string, params map[string]any, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), controlCallTimeout)
	defer cancel()
	c, err := client.Dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	var p any
	if params != nil {
		p = params
	}
	return c.Call(ctx, method, p, result)
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
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return controlUsage(env, "tail: takes no arguments")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, _ []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := client.Dial(ctx, path)
			if err != nil {
				return controlFail(env, "tail", err)
			}
			defer c.Close()
			// subscribe with no params: live events from the next one on.
			sub, err := c.Subscribe(ctx, client.SubscribeOptions{})
			if err != nil {
				return controlFail(env, "tail", err)
			}
			return tailEvents(ctx, env.Stdout, sub.C())
		},
	}
}

// tailEvents copies events to out until the server goes away or ctx ends.
func tailEvents(ctx context.Context, out io.Writer, sub <-chan client.Event) error {
	for {
		select {
		case ev, ok := <-sub:
			if !ok {
				return nil
			}
			if _, err := out.Write(append(ev.Raw[:len(ev.Raw):len(ev.Raw)], '\n')); err != nil {
				return nil // stdout closed (| head): done
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// spawnFlags are the flags of `avenor control spawn` (contract §1.4).
type spawnFlags struct {
	prompt, promptFile, dir, agent, label, model, thinking, backend, serverURL string
	onEvent, sentinelFile, permissionHandler, timeout                          string
	rosterFile, rosterEntry, loopFile, teamFile                                string
	autoApprove                                                                bool
	maxRetries                                                                 int
}

func newControlSpawnCmd(env Env, sock func() (string, error)) *cobra.Command {
	f := &spawnFlags{}
	cmd := &cobra.Command{
		Use: "spawn [flags]", Short: "start a runtime in a stable supervisor",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return controlUsage(env, fmt.Sprintf("spawn: unexpected argument %q", args[0]))
			}
			return nil
		},
		RunE: func(c *cobra.Command, _ []string) error {
			path, err := sock()
			if err != nil {
				return err
			}
			params, err := spawnParams(c.Flags(), f)
			if err != nil {
				return controlUsage(env, "spawn: "+err.Error())
			}
			var raw json.RawMessage
			if err := controlCall(path, "spawn", params, &raw); err != nil {
				return controlFail(env, "spawn", err)
			}
			return printIndented(env, "spawn", raw)
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.prompt, "prompt", "", "inline prompt")
	fl.StringVar(&f.promptFile, "prompt-file", "", "file holding the prompt")
	fl.StringVar(&f.dir, "dir", "", "working directory of the agent")
	fl.StringVar(&f.agent, "agent", "", "agent name")
	fl.StringVar(&f.label, "label", "", "label, stamped as run_label")
	fl.StringVar(&f.model, "model", "", "backend-specific model id")
	fl.StringVar(&f.thinking, "thinking", "", "thinking level")
	fl.StringVar(&f.backend, "backend", "", "backend")
	fl.StringVar(&f.serverURL, "server-url", "", "external runtime server")
	fl.StringVar(&f.onEvent, "on-event", "", "NDJSON event log of the runtime")
	fl.StringVar(&f.sentinelFile, "sentinel-file", "", "completion sentinel of the runtime")
	fl.StringVar(&f.permissionHandler, "permission-handler", "", "file:<base> permission file protocol")
	fl.BoolVar(&f.autoApprove, "auto-approve", false, "approve ordinary permission requests")
	fl.StringVar(&f.timeout, "timeout", "", "wall clock: seconds (600) or a Go duration (10m)")
	fl.IntVar(&f.maxRetries, "max-retries", 0, "extra attempts after an attempt that exits 1")
	fl.StringVar(&f.rosterFile, "roster-file", "", "roster file")
	fl.StringVar(&f.rosterEntry, "roster-entry", "", "entry of --roster-file")
	fl.StringVar(&f.loopFile, "loop-file", "", "phase loop config")
	fl.StringVar(&f.teamFile, "team-file", "", "team config")
	return cmd
}

// spawnParams sends only the values given, with snake_case keys. Paths are
// made absolute: the supervisor's working directory is not the caller's.
func spawnParams(fl *pflag.FlagSet, f *spawnFlags) (map[string]any, error) {
	if f.prompt == "" && f.promptFile == "" && f.loopFile == "" && f.teamFile == "" {
		return nil, errors.New("--prompt, --prompt-file, --loop-file, or --team-file is required")
	}
	if f.prompt != "" && f.promptFile != "" {
		return nil, errors.New("--prompt and --prompt-file are mutually exclusive")
	}
	p := map[string]any{}
	str := func(key, v string) {
		if v != "" {
			p[key] = v
		}
	}
	path := func(key, v string) error {
		if v == "" {
			return nil
		}
		abs, err := filepath.Abs(v)
		if err != nil {
			return fmt.Errorf("--%s %q: %w", strings.ReplaceAll(key, "_", "-"), v, err)
		}
		p[key] = abs
		return nil
	}
	str("prompt", f.prompt)
	str("agent", f.agent)
	str("label", f.label)
	str("model", f.model)
	str("thinking", f.thinking)
	str("backend", f.backend)
	str("server_url", f.serverURL)
	str("roster_entry", f.rosterEntry)
	for _, kv := range [][2]string{
		{"prompt_file", f.promptFile}, {"dir", f.dir}, {"on_event", f.onEvent}, {"sentinel_file", f.sentinelFile},
		{"roster_file", f.rosterFile}, {"loop_file", f.loopFile}, {"team_file", f.teamFile},
	} {
		if err := path(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if h := f.permissionHandler; h != "" {
		base, ok := strings.CutPrefix(h, "file:")
		if !ok || base == "" {
			return nil, errors.New("--permission-handler supports file:<path> only")
		}
		abs, err := filepath.Abs(base)
		if err != nil {
			return nil, err
		}
		p["permission_handler"] = "file:" + abs
	}
	if f.autoApprove {
		p["auto_approve"] = true
	}
	if f.timeout != "" {
		// Decision 3: a number of seconds or a Go duration string.
		if n, err := strconv.Atoi(f.timeout); err == nil && n >= 0 {
			p["timeout"] = n
		} else if _, err := time.ParseDuration(f.timeout); err == nil {
			p["timeout"] = f.timeout
		} else {
			return nil, fmt.Errorf("--timeout %q: want seconds (600) or a Go duration (10m)", f.timeout)
		}
	}
	if fl.Changed("max-retries") && f.maxRetries != 0 {
		p["max_retries"] = f.maxRetries
	}
	return p, nil
}

// startRunControl starts the one-shot control server of `avenor run
// --control-socket` for runner. It takes AVENOR_CONTROL_IDENTITY_TOKEN and
// AVENOR_CONTROL_READY_FD out of the environment (contract §1.14); perms
// may be nil (answer_permission then answers -32001). onConns, when set,
// learns the number of connected control clients.
func startRunControl(path string, runner *hostrt.Runner, runID string, perms control.PermissionAnswerer, onConns func(int), logger hclog.Logger) (*control.Server, error) {
	token, ready, err := control.TakeEnv()
	if err != nil {
		logger.Warn("control socket readiness", "error", err)
	}
	srv := control.NewServer(control.Config{
		Path: path, Logger: logger.Named("control"), IdentityToken: token, Ready: ready, OnConnections: onConns,
	})
	control.RegisterRun(srv, runner, control.RunOptions{Permissions: perms, RunID: runID})
	if err := srv.Start(); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}
