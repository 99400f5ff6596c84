package docgen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Plugin is one built plugin binary and its Describe answer.
type Plugin struct {
	Family   string // from the binary's name
	Name     string // the plugin's own name
	Version  string
	Path     string
	Backends []sdk.BackendInfo
}

// PluginBinaries lists the avenor-plugin-* executables in dir, sorted.
func PluginBinaries(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, plugins.BinaryPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			continue
		}
		out = append(out, m)
	}
	sort.Strings(out)
	return out, nil
}

// Describe launches every plugin binary in dir, as `avenor backends` does,
// and returns their Describe answers sorted by family. A plugin that fails
// to launch is an error: a built plugin must be documentable.
func Describe(ctx context.Context, dir string) ([]Plugin, error) {
	bins, err := PluginBinaries(dir)
	if err != nil {
		return nil, err
	}
	var out []Plugin
	for _, path := range bins {
		p, err := describeOne(ctx, path)
		if err != nil {
			return nil, fmt.Errorf("describe %s: %w", path, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func describeOne(ctx context.Context, path string) (Plugin, error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := plugin.Launch(lctx, plugin.LaunchConfig{Path: path, Logger: hclog.NewNullLogger()})
	if err != nil {
		return Plugin{}, err
	}
	defer c.Kill()
	return Plugin{
		Family:   strings.TrimPrefix(filepath.Base(path), plugins.BinaryPrefix),
		Name:     c.Info().Name,
		Version:  c.Info().Version,
		Path:     path,
		Backends: c.Backends(),
	}, nil
}

// PluginEventTypes maps every event type the plugins declare to the
// backends declaring it.
func PluginEventTypes(ps []Plugin) map[string][]string {
	out := map[string][]string{}
	for _, p := range ps {
		for _, b := range p.Backends {
			for _, t := range b.EventTypes {
				out[t.String()] = append(out[t.String()], b.Name)
			}
		}
	}
	for _, bs := range out {
		sort.Strings(bs)
	}
	return out
}
