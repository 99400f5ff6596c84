package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avenor-go/avenor/host/config"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// Command is `avenor mcp` as its flags gave it (docs/mcp.md): Run checks
// them and serves.
type Command struct {
	// Transport is "stdio" or "http"; Addr the HTTP listen address.
	Transport, Addr string
	// AuthToken and AuthTokenFile give the HTTP bearer token (HTTPToken).
	AuthToken, AuthTokenFile string
	// ControlSocket, SupervisorSocket, NoAutostart and IdleTimeout are
	// Options'.
	ControlSocket, SupervisorSocket string
	NoAutostart                     bool
	IdleTimeout                     time.Duration
	// MaxWait clamps the waits; when not MaxWaitGiven, HTTP's is
	// DefaultHTTPMaxWait.
	MaxWait      time.Duration
	MaxWaitGiven bool
	AllowedHosts []string

	// Getenv and Environ are the process's environment; Version is
	// avenor's; Stderr gets the line with the HTTP address (never the
	// token).
	Getenv  func(string) string
	Environ []string
	Version string
	Stderr  io.Writer
}

// Run checks the flags and serves the tools until ctx ends (stdio: or the
// client closes). The errors are the user's text.
func (c Command) Run(ctx context.Context) error {
	if c.Transport != "stdio" && c.Transport != "http" {
		return fmt.Errorf(`--transport %q: only "stdio" or "http"`, c.Transport)
	}
	if c.NoAutostart && c.SupervisorSocket == "" {
		return ErrNoAutostart
	}
	if c.IdleTimeout < 0 || c.MaxWait < 0 {
		return errors.New("--idle-timeout and --max-wait must not be negative")
	}
	if err := CheckAllowedHosts(c.AllowedHosts); err != nil {
		return err
	}
	if len(c.AllowedHosts) > 0 && c.Transport != "http" {
		return errors.New("--allowed-host is only supported with --transport http")
	}
	token, err := HTTPToken(c.AuthToken, c.AuthTokenFile, c.Getenv)
	if err != nil {
		return err
	}
	if c.Transport == "http" && token == "" {
		return ErrHTTPToken
	}
	maxWait := c.MaxWait
	if c.Transport == "http" && !c.MaxWaitGiven {
		maxWait = DefaultHTTPMaxWait
	}
	dirs, err := config.DefaultDirs(c.Getenv)
	if err != nil {
		return err
	}
	srv, err := New(Options{
		SupervisorSocket: c.SupervisorSocket, ControlSocket: c.ControlSocket, NoAutostart: c.NoAutostart,
		IdleTimeout: c.IdleTimeout, MaxWait: maxWait, Home: c.Getenv("HOME"), StateDir: dirs.State,
		Env: c.Environ, AuthToken: token, AllowedHosts: c.AllowedHosts, Version: c.Version,
		ListBackends: c.listBackends,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if c.Transport == "stdio" {
		if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	}
	return srv.ServeHTTP(ctx, c.Addr, func(addr net.Addr) {
		// The address only, never the token.
		fmt.Fprintf(c.Stderr, "avenor mcp: serving MCP (Streamable HTTP) on http://%s/mcp\n", addr)
	})
}

// listBackends is avenor_list_backends: what `avenor backends --json`
// prints, resolved as avenor backends resolves them (config layers, the
// family mapping and the working directory's project pins).
func (c Command) listBackends(ctx context.Context) (any, error) {
	res, err := hostrun.ResolveWorkingDir(hostrun.Env{Getenv: c.Getenv, Environ: c.Environ})
	if err != nil {
		return nil, err
	}
	return hostrun.ListBackends(ctx, res.Finder), nil
}
