package plugin

import goplugin "github.com/hashicorp/go-plugin"

// Constants that must never change: a host and a plugin built years apart
// still recognise each other by them. A test pins them.
const (
	// ProtocolVersion is the plugin protocol major this sdk speaks. It must
	// equal the "protocol_version:" line of runtime.proto.
	ProtocolVersion = 1

	// MagicCookieKey and MagicCookieValue tell a plugin binary it was started
	// by avenor and not by a person at a shell. NEVER CHANGE THEM.
	MagicCookieKey   = "AVENOR_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "b5e0b3c1-avenor-runtime-plugin-7f1d9a2e"

	// pluginSetKey names the one plugin in each go-plugin PluginSet.
	pluginSetKey = "runtime"
)

// SDKVersion is the version of this sdk, reported in Describe.
var SDKVersion = "0.1.0"

// handshake is the go-plugin handshake; ProtocolVersion there is only the
// fallback, VersionedPlugins carries the majors actually offered.
var handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// pluginSets returns the versioned plugin sets for the majors this sdk
// speaks. A later major is added here side by side; old ones stay.
func pluginSets(p goplugin.Plugin) map[int]goplugin.PluginSet {
	return map[int]goplugin.PluginSet{
		ProtocolVersion: {pluginSetKey: p},
	}
}
