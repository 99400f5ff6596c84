package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/mcpserver"
)

// newMCPCmd is `avenor mcp` (docs/mcp.md, reference mcp-board-original.md
// §1): its flags fill mcpserver.Command, whose Run serves.
func newMCPCmd(env Env) *cobra.Command {
	c := &mcpserver.Command{}
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve MCP tools that let a coding agent spawn, watch, answer and follow up other agents",
		Long:  help("mcp"),
		Args:  noArgs(func(arg string) error { return usageError{fmt.Errorf("avenor mcp takes no arguments, got %q", arg)} }),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c.MaxWaitGiven, c.Getenv, c.Environ, c.Version, c.Stderr = cmd.Flags().Changed("max-wait"), env.Getenv, env.Environ, Version, env.Stderr
			if err := c.Run(ctx); err != nil {
				fmt.Fprintf(env.Stderr, "avenor mcp: %v\n", err)
				return exitError{exitFail}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&c.Transport, "transport", "stdio", "stdio or http (MCP Streamable HTTP)")
	fl.StringVar(&c.Addr, "addr", mcpserver.DefaultAddr, "HTTP listen address")
	fl.StringVar(&c.AuthToken, "auth-token", "", "bearer token the HTTP transport requires (default $MCP_AUTH_TOKEN)")
	fl.StringVar(&c.AuthTokenFile, "auth-token-file", "", "read the bearer token from this file")
	fl.StringVar(&c.ControlSocket, "control-socket", "", "socket of the autostarted supervisor (default ~/.avenor/sockets/avenor-mcp-<pid>.sock)")
	fl.StringVar(&c.SupervisorSocket, "supervisor-socket", "", "use this running supervisor; nothing is autostarted")
	fl.BoolVar(&c.NoAutostart, "no-autostart", false, "never start a supervisor (requires --supervisor-socket)")
	fl.DurationVar(&c.IdleTimeout, "idle-timeout", mcpserver.DefaultIdleTimeout, "the autostarted supervisor's --idle-timeout (0: none; it is then shut down when this server exits)")
	fl.DurationVar(&c.MaxWait, "max-wait", 0, "clamp every wait of avenor_status and avenor_result (default 25s over HTTP, none over stdio; 0 with http: none)")
	fl.StringArrayVar(&c.AllowedHosts, "allowed-host", nil, "an exact host name the HTTP transport accepts in Host and Origin besides loopback (repeatable)")
	return cmd
}
