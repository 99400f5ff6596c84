package main

import (
	"fmt"
	"io"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/host/permission"
	hostrun "github.com/avenor-go/avenor/host/run"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// newRunCmd is `avenor run` (docs/cli.md#avenor-run). The flags that are
// config keys reach the run through settingFlags; the others fill
// host/run's Command, whose Run does the rest.
func newRunCmd(env Env) *cobra.Command {
	f := &hostrun.Command{}
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run one prompt through a backend (the default command)",
		Long:  help("run"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return refuseRunArg(cmd, args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Settings, f.Stdin, f.Stdout, f.Stderr = settingFlags(cmd.Flags()), env.Stdin, env.Stdout, env.Stderr
			f.Env = hostrun.Env{Getenv: env.Getenv, Environ: env.Environ}
			f.NewLogger = func(stderr io.Writer) hclog.Logger { env.Stderr = stderr; return newLogger(env) }
			return exitError{f.Run(cmd.Context())}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.String("backend", "opencode-acp", "backend: opencode-acp, opencode-http, codex-app-server, gemini-acp, cursor-acp, pi, claude, claude-channel, echo, or any installed plugin's")
	fl.StringVar(&f.Prompt, "prompt", "", "inline prompt, UTF-8 (exclusive with --prompt-file)")
	fl.StringVar(&f.PromptFile, "prompt-file", "", fmt.Sprintf("file holding the prompt, UTF-8, at most %d KiB; - for stdin (exclusive with --prompt)", sdk.MaxPromptBytes>>10))
	fl.StringArrayVar(&f.Images, "image", nil, fmt.Sprintf("an image file sent with the prompt (PNG, JPEG, GIF or WebP, at most %d MiB; repeatable, at most %d); refused by backends without native image input", sdk.MaxImageBytes>>20, sdk.MaxImages))
	fl.StringVar(&f.Start, "dir", ".", "working directory of the agent")
	fl.String("model", "", "backend-specific model id")
	fl.String("agent", "", "agent name")
	fl.String("thinking", "", "thinking level: off|minimal|low|medium|high|xhigh|max, as the backend accepts")
	fl.StringVar(&f.Resume, "resume", "", "resume an existing session by id")
	fl.String("label", "", "free-form label, stamped as run_label on every event")
	fl.StringVar(&f.RunID, "run-id", "", "correlation id stamped on every event (default: 16 random hex chars)")
	fl.StringVar(&f.OnEvent, "on-event", "", "NDJSON event log (a regular file, or /dev/null), created or truncated at start; - writes it to stdout")
	fl.StringVar(&f.SentinelFile, "sentinel-file", "", "completion sentinel, written once when the run ends")
	fl.Duration("timeout", 0, "overall wall clock, e.g. 30m (0: none); ends with exit 124")
	fl.Duration("progress-timeout", 0, "end the turn after this long without an event (0: none); exit 124")
	fl.Duration("tool-timeout", 0, "with --watchdog: a tool call whose own processes gain neither CPU nor I/O for this long is hung (0: no tool rule)")
	fl.String("watchdog", "", "what to do with a hung tool call or turn: warn (an avenor.watchdog event, the turn goes on), cancel (exit 130) or restart (a fresh turn on the same session); default: none, --progress-timeout ends the run with 124")
	fl.Int("watchdog-restarts", 2, "with --watchdog restart: the most restarts of the run; the next firing cancels the turn")
	hostrun.SpendFlags(fl) // --spend-*, --context-warn-pct (docs/unattended.md)
	fl.Int("max-retries", 0, "extra attempts after an attempt that exits 1, resuming its session")
	hostrun.RateLimitFlags(fl) // --wait-on-rate-limit, --max-rate-limit-resumes, --report-usage
	fl.BoolVar(&f.AutoApprove, "auto-approve", false, "approve ordinary permission requests once: their allow_once option, else their first allow option")
	fl.Bool("questions", false, "hear the runtime's own questions (question.request; answer with avenor control answer-question, avenor answer --question, the board or avenor mcp) on backends that relay them")
	fl.StringVar(&f.OnPermission, "on-permission", permission.UnansweredWait, "a permission request nobody is set up to answer: wait (say so on stderr and wait), deny (answer its reject option) or fail (end the run, exit 1)")
	fl.String("permission-mode", "", "what turns may do without asking: default (ask for edits and commands), accept-edits, plan (read-only) or full-access; refused where the backend cannot honour it")
	fl.String("append-system-prompt", "", "standing instructions appended to the system prompt: TEXT, or @FILE (UTF-8)")
	fl.String("allowed-tools", "", "exact tool list, comma-separated, in the backend's own tool names; \"\" allows no tool (default: the backend's tools)")
	fl.String("mcp-config", "", "JSON file of MCP servers ({\"mcpServers\":{...}}: stdio command/args/env or http url/headers; ${NAME} values from the environment)")
	f.SandboxFlags(fl) // --sandbox, --sandbox-network, --sandbox-allow-write, --sandbox-deny-read
	fl.StringVar(&f.PermissionHandler, "permission-handler", "", "file:<base> permission file protocol (default: derived from --sentinel-file)")
	fl.Duration("permission-claim-timeout", 0, "how long a control client may hold a permission request (0: no deadline)")
	fl.String("server-url", "", "external runtime server (opencode-http)")
	fl.StringVar(&f.ControlSocket, "control-socket", "", "Unix socket for the control plane")
	registerHTTPDebug(fl, &f.HTTPDebug, &f.HTTPDebugTokenFile)
	fl.StringVar(&f.LoopFile, "loop-file", "", "phase loop config (exclusive with --resume and --team-file)")
	fl.StringVar(&f.TeamFile, "team-file", "", "team config (exclusive with --resume and --loop-file)")
	fl.StringVar(&f.RosterFile, "roster-file", "", "roster of named backend/agent/model loadouts")
	fl.StringVar(&f.RosterEntry, "roster-entry", "", "entry of --roster-file to run")
	fl.BoolVar(&f.Quiet, "quiet", false, "no live view on stderr (the default when stderr is not a terminal)")
	fl.StringVar(&f.Progress, "progress", "", "live view on stderr: tty, plain (one line per event, for CI logs) or off (default: tty when stderr is a terminal, else off)")
	fl.StringVar(&f.PonyConfig, "pony-config", "", "config of the pony backend")
	_ = fl.MarkHidden("pony-config")
	return cmd
}

// registerHTTPDebug registers --http-debug and --http-debug-token-file, as
// avenor run and avenor stable take them.
func registerHTTPDebug(fl *pflag.FlagSet, addr, tokenFile *string) {
	fl.StringVar(addr, "http-debug", "", "loopback address (:port, localhost:port, 127.0.0.1:port) of the HTTP/SSE debug adapter; the token is shown only on a terminal")
	fl.StringVar(tokenFile, "http-debug-token-file", "", "write the --http-debug token to this file (0600), for scripts")
}
