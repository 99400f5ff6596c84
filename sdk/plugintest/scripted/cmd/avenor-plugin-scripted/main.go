// Command avenor-plugin-scripted serves the scripted test backend to avenor.
package main

import (
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
)

func main() {
	plugin.Serve(plugin.Info{Name: "scripted", Version: scripted.Version}, scripted.New())
}
