// Command avenor-plugin-cursor serves avenor's cursor-acp backend
// (internal/cursoracp).
package main

import (
	"github.com/avenor-go/avenor/plugins/cursor/internal/cursoracp"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	plugin.Serve(plugin.Info{Name: "cursor", Version: Version}, cursoracp.New())
}
