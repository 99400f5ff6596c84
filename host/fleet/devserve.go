package fleet

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// DevServeConfig is `avenor fleet dev` around a Dev server.
type DevServeConfig struct {
	DevConfig
	// TempDir holds the store, removed at exit, when StoreDir is "".
	TempDir string
	// CredsDir receives the generated seeds (0600), removed at exit; "":
	// <StateDir()>/fleet-dev/<port>.
	CredsDir string
	StateDir func() (string, error)
	// Out gets the URL, then the flags each member needs.
	Out io.Writer
}

// ServeDev starts a Dev server, writes its keys and prints how to join it,
// then serves until ctx ends; at exit the keys (and a temporary store) are
// removed.
func ServeDev(ctx context.Context, c DevServeConfig) error {
	if c.StoreDir == "" {
		d, err := os.MkdirTemp(c.TempDir, "avenor-fleet-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		c.StoreDir = d
	}
	s, err := StartDev(c.DevConfig)
	if err != nil {
		return err
	}
	defer s.Shutdown()
	creds := c.CredsDir
	if creds == "" {
		state, err := c.StateDir()
		if err != nil {
			return fmt.Errorf("no directory for the credentials (%w); give --creds-dir", err)
		}
		creds = filepath.Join(state, "fleet-dev", strconv.Itoa(s.Addr().(*net.TCPAddr).Port))
	}
	paths, err := s.Keys.Write(creds)
	if err != nil {
		return err
	}
	defer s.Keys.RemoveKeys(creds)
	url := s.ClientURL()
	fmt.Fprintln(c.Out, url)
	fmt.Fprintf(c.Out, "fleet serve: --nats %s --fleet-nkey %s\n", url, paths["fleet"])
	for _, pool := range c.Pools {
		fmt.Fprintf(c.Out, "node of pool %s: --fleet %s --pool %s --fleet-nkey %s\n", pool, url, pool, paths[pool])
	}
	<-ctx.Done()
	return nil
}
