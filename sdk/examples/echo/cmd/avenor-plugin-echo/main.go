// Command avenor-plugin-echo serves the echo backend to avenor.
package main

import (
	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Info{Name: "echo", Version: echo.Version}, echo.New())
}
