package main

import (
	"context"
	"maps"

	"github.com/avenor-go/avenor/plugins/opencode/internal/ocacp"
	"github.com/avenor-go/avenor/plugins/opencode/internal/occatalog"
	"github.com/avenor-go/avenor/plugins/opencode/internal/ochttp"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// withCatalog gives each backend the catalog of the local opencode binary
// (`opencode models`, `opencode auth list`), one listing shared by both.
func withCatalog(bs []runtime.Backend) []runtime.Backend {
	l := &occatalog.Lister{}
	out := make([]runtime.Backend, len(bs))
	for i, b := range bs {
		out[i] = cataloged{Backend: b, lister: l}
	}
	return out
}

// cataloged is an OpenCode backend that lists its models.
type cataloged struct {
	runtime.Backend
	lister *occatalog.Lister
}

func (c cataloged) Info() runtime.BackendInfo {
	info := c.Backend.Info()
	info.Capabilities = maps.Clone(info.Capabilities)
	info.Capabilities[runtime.CapModelListing] = runtime.Supported
	return info
}

// Catalog lists the models and credentials of this machine's opencode. An
// opencode-http backend pointed at a running server (AVENOR_OPENCODE_URL)
// would list the local binary's, not the server's: it says so instead.
func (c cataloged) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	if c.Backend.Info().Name == ochttp.Name && lookup(req.Env, ochttp.ServerURLEnv) != "" {
		return runtime.Catalog{ModelsSupported: true, Auth: runtime.AuthUnknown,
			ModelsError: "the models of a running OpenCode server (" + ochttp.ServerURLEnv + ") are not listed; unset it to list this machine's opencode"}
	}
	bin := agentproc.ResolveBinary("opencode", ocacp.BinaryEnv, req.Options, req.Env)
	return c.lister.Catalog(ctx, bin, agentproc.Environ(req.Env, nil))
}

func lookup(env map[string]string, k string) string {
	if v, ok := env[k]; ok {
		return v
	}
	return agentproc.Lookup(agentproc.Environ(nil, nil), k)
}
