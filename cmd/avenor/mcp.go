package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/mcpserver"
	hostrun "github.com/avenor-go/avenor/host/run"
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
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "avenor mcp: %v\n", err)
		return exitFail
	}
	if f.transport != "stdio" && f.transport != "http" {
		return fail(fmt.Errorf(`--transport %q: only "stdio" or "http"`, f.transport))
	}
	if f.noAutostart && f.supervisorSocket == "" {
		return fail(mcpserver.ErrNoAutostart)
	}
	if f.idleTimeout < 0 || f.maxWait < 0 {
		return fail(errors.New("--idle-timeout and --max-wait must not be negative"))
	}
	if err := mcpserver.CheckAllowedHosts(f.allowedHosts); err != nil {
		return fail(err)
	}
	if len(f.allowedHosts) > 0 && f.transport != "http" {
		return fail(errors.New("--allowed-host is only supported with --transport http"))
	}
	token, err := mcpserver.HTTPToken(f.authToken, f.authTokenFile, env.Getenv)
	if err != nil {
		return fail(err)
	}
	if f.transport == "http" && token == "" {
		return fail(mcpserver.ErrHTTPToken)
	}
	maxWait := f.maxWait
	if f.transport == "http" && !cmd.Flags().Changed("max-wait") {
		maxWait = mcpserver.DefaultHTTPMaxWait
	}
	dirs, err := config.DefaultDirs(env.Getenv)
	if err != nil {
		return fail(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{
		SupervisorSocket: f.supervisorSocket, ControlSocket: f.controlSocket, NoAutostart: f.noAutostart,
		IdleTimeout: f.idleTimeout, MaxWait: maxWait, Home: env.Getenv("HOME"), StateDir: dirs.State,
		Env: env.Environ, AuthToken: token, AllowedHosts: f.allowedHosts, Version: Version,
		ListBackends: func(ctx context.Context) (any, error) { return mcpBackends(ctx, env) },
	})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.transport == "stdio" {
		if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return fail(err)
		}
		return exitOK
	}
	err = srv.ServeHTTP(ctx, f.addr, func(addr net.Addr) {
		// The address only, never the token.
		fmt.Fprintf(env.Stderr, "avenor mcp: serving MCP (Streamable HTTP) on http://%s/mcp\n", addr)
	})
	if err != nil {
		return fail(err)
	}
	return exitOK
}

// mcpBackends is avenor_list_backends: what `avenor backends --json`
// prints, from the plugins this process finds (the working directory's
// project pins first).
func mcpBackends(ctx context.Context, env Env) (any, error) {
	// The same resolution as avenor backends: config layers, the family
	// mapping and the project's lock.
	res, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
	if err != nil {
		return nil, err
	}
	return hostrun.ListBackends(ctx, res.Finder), nil
}
