// Package claudecode is avenor's three Claude Code backends, served by
// avenor-plugin-claude:
//
//   - claude-stream: `claude -p` speaking bidirectional stream-json with the
//     Agent SDK's control protocol (runtime-protocols.md §5.1–5.3), one
//     process per session, permissions relayed over stdio, resumable across
//     avenor runs by session id (session.go, wire.go);
//   - claude: the interactive TUI in a pseudo-terminal, or with
//     AVENOR_CLAUDE_TERMINAL=tmux in a private tmux server (docs/backends.md#claude-plugin-claude),
//     events from its JSONL transcript, idle/busy and permission dialogs read
//     from the screen rendered by a terminal emulator (pty.go, tmux.go,
//     terminal.go, transcript.go);
//   - claude-channel (experimental, docs/backends.md#claude-channel-plugin-claude-experimental): the same TUI started
//     with a development channel, an MCP server (avenor-plugin-claude, run
//     as `avenor-plugin-claude claude-channel …`) that connects Claude Code
//     to a broker the session owns (channel_backend.go, internal/channel).
package claudecode
