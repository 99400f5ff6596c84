package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/control/httpdebug"
)

// httpDebugDrain bounds how long an ending avenor waits for its HTTP debug
// event streams to deliver the run's last events.
const httpDebugDrain = 2 * time.Second

// startHTTPDebug starts the --http-debug adapter (contract §5.8) on addr
// for cfg's target (run's or stable's), writing tokenFile when set; the
// token is printed only when stderr is a terminal.
func startHTTPDebug(addr, tokenFile string, cfg httpdebug.Config, env Env, logger hclog.Logger) (*httpdebug.Server, error) {
	cfg.Addr = addr
	cfg.TokenFile = tokenFile
	cfg.Stderr = env.Stderr
	cfg.ShowToken = isTerminal(env.Stderr)
	cfg.Logger = logger.Named("httpdebug")
	srv, err := httpdebug.Start(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("--http-debug: %w", err)
	}
	return srv, nil
}

// stopHTTPDebug (one-shot) ends the run's event streams once they delivered its last
// events (or after httpDebugDrain), then stops the adapter.
func stopHTTPDebug(srv *httpdebug.Server, target *httpdebug.OneShot) {
	target.End()
	ctx, cancel := context.WithTimeout(context.Background(), httpDebugDrain)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
