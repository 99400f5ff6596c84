package main

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/board"
	"github.com/avenor-go/avenor/host/config"
)

type boardFlags struct {
	addr, scan, socket, token string
	allowMutations, noAuth    bool
	noOpen                    bool
	stallAfter                time.Duration
}

func newBoardCmd(env Env) *cobra.Command {
	f := &boardFlags{}
	cmd := &cobra.Command{
		Use:   "board [flags]",
		Short: "Serve a web page showing every runtime behind the control sockets",
		Long:  help("board"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitError{boardMain(cmd.Context(), f, env)}
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.addr, "addr", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	fl.StringVar(&f.scan, "scan", "~/.avenor/sockets", "comma-separated directories whose *.sock control sockets are shown")
	fl.StringVar(&f.socket, "socket", "", "show only this control socket (overrides --scan)")
	fl.StringVar(&f.token, "token", "", "the API token (default: a random one); needed for a non-loopback --addr unless --no-auth")
	fl.BoolVar(&f.allowMutations, "allow-mutations", false, "let the page answer permissions, cancel and prompt (every POST route)")
	fl.BoolVar(&f.noAuth, "no-auth", false, "serve the API without a token (trusted networks only)")
	fl.BoolVar(&f.noOpen, "no-open", false, "do not open a browser (one opens when DISPLAY or WAYLAND_DISPLAY is set)")
	fl.DurationVar(&f.stallAfter, "stall-after", board.DefaultStallAfter, "mark a running runtime without a new event for this long as waiting for you")
	return cmd
}

func boardMain(parent context.Context, f *boardFlags, env Env) int {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger := newLogger(env)
	var (
		scan, named []string
		stateDir    string
	)
	if f.socket == "" {
		scan = strings.Split(f.scan, ",")
		// docs/board.md: the socket of AVENOR_SOCKET, and every
		// running supervisor's record, wherever its socket is.
		if p := env.Getenv(client.SocketEnv); p != "" {
			named = append(named, p)
		}
		if dirs, err := config.DefaultDirs(env.Getenv); err == nil {
			stateDir = dirs.State
		}
	}
	err := board.Serve(ctx, board.Config{
		Addr: f.addr, Scan: scan, Socket: f.socket, Sockets: named, StateDir: stateDir, Token: f.token, NoAuth: f.noAuth,
		AllowMutations: f.allowMutations, StallAfter: f.stallAfter, Home: env.Getenv("HOME"),
		Logger: logger.Named("board"),
	}, env.Stdout, env.Stderr, !f.noOpen && (env.Getenv("DISPLAY") != "" || env.Getenv("WAYLAND_DISPLAY") != ""))
	if err != nil {
		fmt.Fprintf(env.Stderr, "avenor board: %v\n", err)
		return exitUsage
	}
	return exitOK
}
