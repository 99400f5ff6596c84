// Package appserver is avenor's codex-app-server backend: the Codex CLI
// driven over its app-server protocol (`codex app-server`,
// docs/backends.md#codex-app-server-plugin-codex, runtime-protocols.md §3).
//
// The protocol is JSON-RPC without the "jsonrpc" field, one message per
// line on stdio. A session is one app-server process and one Codex thread;
// a turn is turn/start … turn/completed. Threads always start with the
// approval policy "untrusted", so every command or edit Codex wants to run
// comes to avenor as a permission request and the host's broker decides
// (--auto-approve is the broker's, never the plugin's).
package appserver
