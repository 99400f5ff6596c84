// Command avenor-plugin-gemini serves avenor's gemini-acp backend: Gemini
// CLI driven over ACP (`gemini --acp`, docs/backends.md#gemini-acp-plugin-gemini, runtime-protocols.md
// §6.1).
package main

import (
	"github.com/avenor-go/avenor/plugins/gemini/internal/geminiacp"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	plugin.Serve(plugin.Info{Name: "gemini", Version: Version}, geminiacp.New())
}
