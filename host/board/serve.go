package board

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"
)

// stopWait bounds how long a stopping board waits for requests in flight.
const stopWait = 5 * time.Second

// Serve is `avenor board`: it starts the board of cfg, prints the one
// line with the URL to open, token included, on stdout — whatever stdout
// is (docs/board.md): it belongs to whoever started the board, and a
// script opens the page from it; the token never goes to a log — warns
// on stderr when cfg.NoAuth, asks the desktop to open the page when
// openPage, and serves until ctx ends or the server stops. An error is a
// board that could not start.
func Serve(ctx context.Context, cfg Config, stdout, stderr io.Writer, openPage bool) error {
	srv, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "avenor board: serving %s\n", srv.TokenURL())
	if cfg.NoAuth {
		fmt.Fprintln(stderr, "avenor board: --no-auth: anyone who can reach this address can read every runtime's events")
	}
	if openPage {
		openBrowser(srv.TokenURL(), cfg.Logger)
	}
	select {
	case <-ctx.Done():
	case <-srv.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// openBrowser asks the desktop to open url; a failure is only logged (the
// URL was printed). The opener is waited for, so it leaves no zombie.
func openBrowser(url string, logger hclog.Logger) {
	cmd := exec.Command("xdg-open", url)
	if err := cmd.Start(); err != nil {
		if logger != nil {
			logger.Debug("could not open a browser", "error", err)
		}
		return
	}
	go func() { _ = cmd.Wait() }()
}
