// Command avenor-plugin-codex serves avenor's codex-app-server backend
// (internal/appserver).
package main

import (
	"github.com/avenor-go/avenor/plugins/codex/internal/appserver"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	plugin.Serve(plugin.Info{Name: "codex", Version: Version}, appserver.New())
}
