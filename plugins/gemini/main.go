// Command avenor-plugin-gemini serves avenor's gemini-acp backend
// (internal/geminiacp).
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
