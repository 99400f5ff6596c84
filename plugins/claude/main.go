// Command avenor-plugin-claude serves avenor's Claude Code backends,
// claude-stream, claude and claude-channel (internal/claudecode says how each
// drives Claude Code).
//
// Run as `avenor-plugin-claude claude-channel --run-id R --token T
// --broker-url U` it is claude-channel's MCP stdio sidecar (internal/channel)
// instead of a plugin; `avenor claude-channel` execs it that way.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/plugins/claude/internal/channel"
	"github.com/avenor-go/avenor/plugins/claude/internal/claudecode"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Version is the plugin's version; release builds set it with
// -ldflags "-X main.Version=1.2.0".
var Version = "0.1.0"

func main() {
	if len(os.Args) > 1 && os.Args[1] == sidecarCommand {
		os.Exit(sidecarMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	plugin.Serve(plugin.Info{Name: "claude", Version: Version}, claudecode.NewStreamBackend(), claudecode.NewPTYBackend(), claudecode.NewChannelBackend())
}

// sidecarCommand is the first argument that makes this binary the MCP
// sidecar of a claude-channel session.
const sidecarCommand = claudecode.SidecarCommand

// sidecarMain runs the sidecar; it returns the exit code (2: bad flags).
func sidecarMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(sidecarCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	runID := fs.String("run-id", "", "the session's run id (required)")
	token := fs.String("token", "", "the session's broker token (required)")
	brokerURL := fs.String("broker-url", "", "the session's broker URL (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *runID == "" || *token == "" || *brokerURL == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "--run-id, --token, and --broker-url are required")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := hclog.New(&hclog.LoggerOptions{Name: "avenor-channel", Output: stderr, Level: hclog.Info})
	err := channel.RunSidecar(ctx, channel.SidecarConfig{RunID: *runID, Token: *token, BrokerURL: *brokerURL,
		In: stdin, Out: stdout, Log: log, Version: Version})
	if err != nil {
		log.Error("sidecar stopped", "error", err)
		return 1
	}
	return 0
}
