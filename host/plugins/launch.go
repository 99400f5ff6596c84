package plugins

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Launched is a running plugin and the backend asked of it.
type Launched struct {
	Client  *plugin.Client
	Backend runtime.Backend
	Found   Found
}

// Launch starts the plugin binary in found and checks that it serves backend.
func Launch(ctx context.Context, found Found, backend string, logger hclog.Logger) (*Launched, error) {
	c, err := plugin.Launch(ctx, plugin.LaunchConfig{Path: found.Path, Logger: logger})
	if err != nil {
		return nil, err
	}
	b, ok := c.Backend(backend)
	if !ok {
		c.Kill()
		return nil, fmt.Errorf("plugin %s (%s) does not serve backend %q; it serves: %v", c.Info().Name, found.Path, backend, c.SortedBackendNames())
	}
	return &Launched{Client: c, Backend: b, Found: found}, nil
}
