//go:build !unix

package mcpconfig

// lockDir does not lock where flock is unavailable: concurrent editors of
// one .mcp.json may then lose an entry.
func lockDir(string) (func(), error) { return func() {}, nil }
