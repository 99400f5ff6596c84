// Package mcpconfig edits a project's .mcp.json, the file Claude Code reads
// its project MCP servers from (`{"mcpServers":{"<name>":{"command":…,"args":[…]}}}`).
//
// It owns exactly three edits, each a read-modify-write under an exclusive
// lock on the file's directory, written atomically (temp file in the same
// directory, then rename) with two-space indentation:
//
//   - Upsert adds or replaces one server entry;
//   - Remove deletes one entry;
//   - RemovePrefix deletes every entry whose name starts with a prefix
//     (avenor claude-channel-cleanup removes "avenor-channel-*").
//
// Every other key, at the top level and inside mcpServers, is kept as it
// was (values re-indented, keys sorted). When a removal leaves
// mcpServers empty the key goes, and when the object is then empty the file
// is deleted (docs/cli.md#avenor-claude-channel). A malformed file is an error that names the
// file and is never rewritten. A missing file is an empty object.
//
// The claude plugin's claude-channel backend and cmd/avenor import it.
package mcpconfig
