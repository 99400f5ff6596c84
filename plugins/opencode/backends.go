package main

import (
	"github.com/avenor-go/avenor/plugins/opencode/internal/ocacp"
	"github.com/avenor-go/avenor/plugins/opencode/internal/ochttp"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// backends are the OpenCode backends this plugin serves: opencode-acp and
// opencode-http (an `opencode serve` driven over HTTP and SSE, contract
// docs/backends.md#opencode-http-plugin-opencode, internal/ochttp).
func backends() []runtime.Backend {
	return withCatalog([]runtime.Backend{ocacp.New(), ochttp.New()})
}
