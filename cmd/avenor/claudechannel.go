package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
	"github.com/avenor-go/avenor/sdk/mcpconfig"
)

// channelBackend is the backend whose plugin implements the sidecar.
const channelBackend = "claude-channel"

// channelServerPrefix names the .mcp.json entries claude-channel sessions
// add (docs/backends.md#claude-channel-plugin-claude-experimental): avenor-channel-<slug>.
const channelServerPrefix = "avenor-channel-"

// errChannelFlags is docs/cli.md#avenor-claude-channel's message, exact.
var errChannelFlags = errors.New("--run-id, --token, and --broker-url are required")

// newClaudeChannelCmd is the MCP stdio sidecar Claude Code starts from
// .mcp.json. The sidecar lives in the claude plugin binary (it shares the
// broker's wire types with the backend), so this command finds that binary
// the way `avenor run --backend claude-channel` would (pins and their
// hashes included) and execs it: stdio passes straight through.
func newClaudeChannelCmd(env Env) *cobra.Command {
	var runID, token, brokerURL string
	cmd := &cobra.Command{
		Use:   "claude-channel --run-id <id> --token <token> --broker-url <url>",
		Short: "MCP stdio sidecar of the claude-channel backend (started by Claude Code, not by hand)",
		Long:  help("claude-channel"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runID == "" || token == "" || brokerURL == "" {
				return usageError{errChannelFlags}
			}
			path, err := findChannelPlugin(env)
			if err != nil {
				return err
			}
			argv := []string{path, "claude-channel", "--run-id", runID, "--token", token, "--broker-url", brokerURL}
			if err := syscall.Exec(path, argv, env.Environ); err != nil {
				return fmt.Errorf("executing the claude plugin %s: %w", path, err)
			}
			return nil // not reached
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&runID, "run-id", "", "the session's run id (required)")
	fl.StringVar(&token, "token", "", "the session's broker token (required)")
	fl.StringVar(&brokerURL, "broker-url", "", "the session's broker, http://127.0.0.1:<port> (required)")
	return cmd
}

// findChannelPlugin resolves the plugin serving claude-channel: the
// project's pin (hash-checked by Find), the config's family mapping, then
// the usual search order.
func findChannelPlugin(env Env) (string, error) {
	// As run resolves it: the config's [backends.claude-channel] plugin,
	// the project's pins, as every other command does.
	resolved, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
	if err != nil {
		return "", err
	}
	found, err := resolved.Find(channelBackend)
	if err != nil {
		return "", err
	}
	return found.Path, nil
}

// newChannelCleanupCmd removes the .mcp.json entries a crashed
// claude-channel session left behind (docs/cli.md#avenor-claude-channel).
func newChannelCleanupCmd(env Env) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "claude-channel-cleanup [--dir <project>]",
		Short: "Remove every avenor-channel-* server from <project>/.mcp.json",
		Long:  help("claude-channel-cleanup"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := mcpconfig.Path(dir)
			n, err := mcpconfig.RemovePrefix(path, channelServerPrefix)
			if err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "removed %d avenor-channel entries from %s\n", n, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "project directory holding .mcp.json")
	return cmd
}
