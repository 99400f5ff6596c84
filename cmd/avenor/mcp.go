package main

import (
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/mcpserver"
)

// mcpFlags are the flags of `avenor mcp` (docs/mcp.md, reference
// mcp-board-original.md §1).
type mcpFlags struct {
	transport, addr, authToken, authTokenFile string
	controlSocket, supervisorSocket           string
	noAutostart                               bool
	idleTimeout, maxWait                      time.Duration
	allowedHosts                              []string
}

func newMCPCmd(env Env) *cobra.Command {
	f := &mcpFlags{}
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve MCP tools that let a coding agent spawn, watch, answer and follow up other agents",
		Long:  help("mcp"),
		Args:  noArgs(func(arg string) error { return usageError{fmt.Errorf("avenor mcp takes no arguments, got %q", arg)} }),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{mcpMain(cmd, f, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.transport, "transport", "stdio", "stdio or http (MCP Streamable HTTP)")
	fl.StringVar(&f.addr, "addr", mcpserver.DefaultAddr, "HTTP listen address")
	fl.StringVar(&f.authToken, "auth-token", "", "bearer token the HTTP transport requires (default $MCP_AUTH_TOKEN)")
	fl.StringVar(&f.authTokenFile, "auth-token-file", "", "read the bearer token from this file")
	fl.StringVar(&f.controlSocket, "control-socket", "", "socket of the autostarted supervisor (default ~/.avenor/sockets/avenor-mcp-<pid>.sock)")
	fl.StringVar(&f.supervisorSocket, "supervisor-socket", "", "use this running supervisor; nothing is autostarted")
	fl.BoolVar(&f.noAutostart, "no-autostart", false, "never start a supervisor (requires --supervisor-socket)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", mcpserver.DefaultIdleTimeout, "the autostarted supervisor's --idle-timeout (0: none; it is then shut down when this server exits)")
	fl.DurationVar(&f.maxWait, "max-wait", 0, "clamp every wait of avenor_status and avenor_result (default 25s over HTTP, none over stdio; 0 with http: none)")
	fl.StringArrayVar(&f.allowedHosts, "allowed-host", nil, "an exact host name the HTTP transport accepts in Host and Origin besides loopback (repeatable)")
	return cmd
}

func mcpMain(cmd *cobra.Command, f *mcpFlags, env Env) int {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := mcpserver.Command{
		Transport: f.transport, Addr: f.addr, AuthToken: f.authToken, AuthTokenFile: f.authTokenFile,
		ControlSocket: f.controlSocket, SupervisorSocket: f.supervisorSocket, NoAutostart: f.noAutostart,
		IdleTimeout: f.idleTimeout, MaxWait: f.maxWait, MaxWaitGiven: cmd.Flags().Changed("max-wait"), AllowedHosts: f.allowedHosts,
		Getenv: env.Getenv, Environ: env.Environ, Version: Version, Stderr: env.Stderr,
	}.Run(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor mcp: %v\n", err)
		return exitFail
	}
	return exitOK
}
