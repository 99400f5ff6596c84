// Command major99 is a plugin from the future: it answers avenor's
// handshake (same magic cookie) but speaks only plugin protocol major 99.
// Tests build it as avenor-plugin-major99 and check that avenor refuses it
// at once, saying what to install, instead of hanging or misreading it.
package main

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// major is the only protocol major this plugin offers.
const major = 99

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  major,
			MagicCookieKey:   plugin.MagicCookieKey,
			MagicCookieValue: plugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{major: {"runtime": future{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}

// future is a gRPC plugin with no services: the host never gets that far.
type future struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (future) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }

func (future) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}
