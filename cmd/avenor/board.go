package main

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/board"
	"github.com/avenor-go/avenor/host/config"
)

// newBoardCmd is `avenor board` (docs/board.md): its flags fill
// board.Config, which board.Serve serves.
func newBoardCmd(env Env) *cobra.Command {
	var c board.Config
	var scan string
	var noOpen bool
	cmd := &cobra.Command{
		Use:   "board [flags]",
		Short: "Serve a web page showing every runtime behind the control sockets",
		Long:  help("board"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{boardMain(cmd.Context(), c, scan, noOpen, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&c.Addr, "addr", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	fl.StringVar(&scan, "scan", "~/.avenor/sockets", "comma-separated directories whose *.sock control sockets are shown")
	fl.StringVar(&c.Socket, "socket", "", "show only this control socket (overrides --scan)")
	fl.StringVar(&c.Token, "token", "", "the API token (default: a random one); needed for a non-loopback --addr unless --no-auth")
	fl.BoolVar(&c.AllowMutations, "allow-mutations", false, "let the page answer permissions, cancel and prompt (every POST route)")
	fl.BoolVar(&c.NoAuth, "no-auth", false, "serve the API without a token (trusted networks only)")
	fl.BoolVar(&noOpen, "no-open", false, "do not open a browser (one opens when DISPLAY or WAYLAND_DISPLAY is set)")
	fl.DurationVar(&c.StallAfter, "stall-after", board.DefaultStallAfter, "mark a running runtime without a new event for this long as waiting for you")
	return cmd
}

func boardMain(parent context.Context, c board.Config, scan string, noOpen bool, env Env) int {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if c.Socket == "" {
		c.Scan = strings.Split(scan, ",")
		// docs/board.md: the socket of AVENOR_SOCKET, and every
		// running supervisor's record, wherever its socket is.
		if p := env.Getenv(client.SocketEnv); p != "" {
			c.Sockets = append(c.Sockets, p)
		}
		if dirs, err := config.DefaultDirs(env.Getenv); err == nil {
			c.StateDir = dirs.State
		}
	}
	c.Home, c.Logger = env.Getenv("HOME"), newLogger(env).Named("board")
	openPage := !noOpen && (env.Getenv("DISPLAY") != "" || env.Getenv("WAYLAND_DISPLAY") != "")
	if err := board.Serve(ctx, c, env.Stdout, env.Stderr, openPage); err != nil {
		fmt.Fprintf(env.Stderr, "avenor board: %v\n", err)
		return exitUsage
	}
	return exitOK
}
