// Command avenor-plugin-broken serves the deliberately broken backends of
// package broken, for tests of the conformance kit and `avenor plugin verify`.
package main

import (
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/internal/broken"
)

func main() {
	plugin.Serve(plugin.Info{Name: "broken", Version: broken.Version}, broken.Backends()...)
}
