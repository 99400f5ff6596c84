// Command avenor-plugin-claude serves avenor's Claude Code backends:
//
//   - claude-stream: `claude -p` speaking bidirectional stream-json with the
//     Agent SDK's control protocol (runtime-protocols.md §5.1–5.3), one
//     process per session, permissions relayed over stdio, resumable across
//     avenor runs by session id;
//   - claude: the interactive TUI in a pseudo-terminal (contract §7.7),
//     events from its JSONL transcript, idle/busy and permission dialogs read
//     from the screen rendered by a terminal emulator.
//
// claude-channel (contract §7.8) and the tmux launcher of `claude` are not
// implemented yet, so they are not advertised.
package main

import (
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	plugin.Serve(plugin.Info{Name: "claude", Version: Version}, newStreamBackend(), newPTYBackend())
}
