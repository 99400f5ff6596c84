package main

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control/httpdebug"
)

// startHTTPDebug starts the --http-debug adapter (docs/control-protocol.md#http-debug) on addr
// for cfg's target (run's or stable's), writing tokenFile when set; the
// token is printed only when stderr is a terminal.
func startHTTPDebug(addr, tokenFile string, cfg httpdebug.Config, env Env, logger hclog.Logger) (*httpdebug.Server, error) {
	cfg.Addr = addr
	cfg.TokenFile = tokenFile
	cfg.Stderr = env.Stderr
	// Through the live view's writer the token line lands above the view
	// (docs/control-protocol.md#http-debug: shown whenever stderr is a terminal).
	cfg.ShowToken = env.stderrIsTerminal()
	cfg.Logger = logger.Named("httpdebug")
	srv, err := httpdebug.Start(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("--http-debug: %w", err)
	}
	return srv, nil
}
