// Command avenor-plugin-pi serves avenor's pi backend (internal/pi).
package main

import (
	"github.com/avenor-go/avenor/plugins/pi/internal/pi"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	plugin.Serve(plugin.Info{Name: "pi", Version: Version}, pi.New())
}
