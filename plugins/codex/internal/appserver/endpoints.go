package appserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pelletier/go-toml/v2"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// codexConfig is what --sandbox-network model reads of Codex's
// config.toml: the provider in use (model_provider, or the selected
// profile's) and each provider's base_url.
type codexConfig struct {
	ModelProvider  string `toml:"model_provider"`
	Profile        string `toml:"profile"`
	ModelProviders map[string]struct {
		BaseURL string `toml:"base_url"`
	} `toml:"model_providers"`
	Profiles map[string]struct {
		ModelProvider string `toml:"model_provider"`
	} `toml:"profiles"`
}

// modelEndpoints are the model endpoints of Codex's configuration in
// $CODEX_HOME/config.toml (~/.codex by default) under env: the base_url
// of the provider in use; for the built-in openai provider without one,
// OPENAI_BASE_URL. A provider whose endpoint is not written down (the
// built-in ones' defaults) gives none: the caller refuses rather than
// guess.
func modelEndpoints(env []string) ([]runtime.NetDest, error) {
	dirs := runtimeDirs(env)
	if len(dirs) == 0 {
		return nil, nil
	}
	path := filepath.Join(dirs[0], "config.toml")
	var cfg codexConfig
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", path, err)
	default:
		if err := toml.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	provider := cfg.ModelProvider
	if p, ok := cfg.Profiles[cfg.Profile]; ok && cfg.Profile != "" && p.ModelProvider != "" {
		provider = p.ModelProvider
	}
	if provider == "" {
		provider = "openai"
	}
	base := cfg.ModelProviders[provider].BaseURL
	if base == "" && provider == "openai" {
		base = agentproc.Lookup(env, "OPENAI_BASE_URL")
	}
	if base == "" {
		return nil, nil
	}
	d, err := runtime.EndpointOfURL(base)
	if err != nil {
		return nil, fmt.Errorf("model provider %s: %w", provider, err)
	}
	return []runtime.NetDest{d}, nil
}

// ModelEndpoints implements runtime.ModelEndpointReporter: what
// --sandbox-network model allows (configFor filled them).
func (s *Session) ModelEndpoints() []runtime.NetDest { return s.cfg.Boundary.ModelEndpoints }
