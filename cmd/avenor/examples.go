package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Examples: sections of the commands whose definitions do
// not set their own, by command path without the leading "avenor" ("" is
// the root). They live together so that every --help shows how a command
// is called; TestEveryCommandHasExamples keeps it so for new commands.
var examples = map[string]string{
	"": `  avenor --backend echo --prompt "hello" --on-event ev.ndjson --sentinel-file run.done
  avenor run --backend codex-app-server --prompt-file task.md --timeout 30m
  avenor backends                          # which backends are installed and ready
  avenor config show                       # the settings a run here would use
  AVENOR_LOG=debug avenor --backend pi --prompt "hi"   # which config files and plugin it chose`,
	"await": `  avenor await rt_3 --socket /tmp/stable.sock
  avenor await my-label --until done --timeout 30m --print-output
  avenor await rt_3 --socket /tmp/stable.sock --format json | jq .`,
	"backends": `  avenor backends
  avenor backends --json | jq -r '.[] | select(.ready) | .backend'`,
	"board": `  avenor board                                   # every socket in ~/.avenor/sockets, a browser opens
  avenor board --socket /tmp/stable.sock --allow-mutations
  avenor board --addr 0.0.0.0:8080 --token "$(cat ~/.board-token)" --no-open`,
	"fleet": `  avenor fleet dev --port 4222                    # a one-machine JetStream to try a fleet on; prints the keys
  avenor stable --control-socket $XDG_RUNTIME_DIR/n1.sock --fleet nats://127.0.0.1:4222 --node n1 \
    --fleet-nkey ~/.local/state/avenor/fleet-dev/4222/node-default.nk
  avenor fleet serve --nats nats://127.0.0.1:4222 --control-socket $XDG_RUNTIME_DIR/fleet.sock \
    --fleet-nkey ~/.local/state/avenor/fleet-dev/4222/fleet.nk`,
	"fleet dev": `  avenor fleet dev
  avenor fleet dev --port 4222 --store ~/.cache/avenor-fleet --pool gpu --pool cpu`,
	"fleet serve": `  avenor fleet serve --nats nats://127.0.0.1:4222 --control-socket /tmp/fleet.sock
  avenor fleet serve --nats tls://nats-a:4222,tls://nats-b:4222 --fleet-creds ~/fleet.creds \
    --fleet-tls-ca ca.pem --fleet-replicas 3 --control-socket /tmp/fleet.sock
  avenor control --socket /tmp/fleet.sock spawn --backend echo --prompt "hi"`,
	"claude-channel": `  # Claude Code starts it from .mcp.json; by hand only to debug the sidecar:
  avenor claude-channel --run-id 0f3c9a1b2c3d4e5f --token <token> --broker-url http://127.0.0.1:43117`,
	"claude-channel-cleanup": `  avenor claude-channel-cleanup
  avenor claude-channel-cleanup --dir ~/src/app`,
	"control": `  avenor control --socket /tmp/run.sock status
  avenor control --socket /tmp/stable.sock spawn --backend echo --prompt "hi" --label demo
  avenor control --socket /tmp/stable.sock tail | jq -c 'select(.event=="tool.call")'`,
	"control answer-permission": `  avenor control --socket /tmp/run.sock answer-permission 17 allow_once
  avenor control --socket /tmp/stable.sock answer-permission 4 reject_once rt_3`,
	"control cancel": `  avenor control --socket /tmp/run.sock cancel
  avenor control --socket /tmp/stable.sock cancel rt_3`,
	"control interrupt-and-prompt": `  avenor control --socket /tmp/run.sock interrupt-and-prompt "stop, and run the tests first"
  avenor control --socket /tmp/stable.sock interrupt-and-prompt "use the v2 API" rt_3`,
	"control prompt": `  avenor control --socket /tmp/run.sock prompt "now write the tests"
  avenor control --socket /tmp/stable.sock prompt "and the docs" rt_3`,
	"control shutdown": `  avenor control --socket /tmp/stable.sock shutdown
  avenor control --socket /tmp/stable.sock shutdown kill`,
	"control spawn": `  avenor control --socket /tmp/stable.sock spawn --backend echo --prompt "hi"
  avenor control --socket /tmp/stable.sock spawn --backend codex-app-server --prompt-file task.md \
      --dir ~/src/app --label fix-42 --on-event fix-42.ndjson --timeout 30m`,
	"control status": `  avenor control --socket /tmp/run.sock status
  avenor control --socket /tmp/stable.sock status rt_3 | jq .phase`,
	"control tail": `  avenor control --socket /tmp/run.sock tail
  avenor control --socket /tmp/stable.sock tail | jq -c 'select(.event=="session.end")'`,
	"control tree_budget": `  avenor control --socket /tmp/stable.sock tree_budget`,
	"control wait-for-capacity": `  avenor control --socket /tmp/stable.sock wait-for-capacity
  avenor control --socket /tmp/stable.sock wait-for-capacity --timeout 5m || echo "still full"`,
	"mcp": `  avenor mcp                                      # stdio, for an agent's MCP config
  avenor mcp --supervisor-socket /tmp/stable.sock --no-autostart
  MCP_AUTH_TOKEN=secret avenor mcp --transport http --addr 127.0.0.1:3748`,
	"plugin": `  avenor plugin install ./bin/avenor-plugin-codex
  avenor plugin use codex@1.2.0
  avenor plugin list`,
	"plugin install": `  avenor plugin install ./bin/avenor-plugin-codex
  avenor plugin install "$(go env GOPATH)/bin/avenor-plugin-mine"`,
	"plugin list": `  avenor plugin list
  avenor plugin list --json | jq -r '.plugins[] | "\(.family) \(.used.path)"'`,
	"plugin unpin": `  avenor plugin unpin codex`,
	"plugin use": `  avenor plugin use codex@1.2.0                   # pin an installed version for this project
  avenor plugin use codex                         # pin the highest installed version
  avenor plugin use --path ./bin/avenor-plugin-mine mine`,
	"plugin verify": `  avenor plugin verify ./bin/avenor-plugin-echo
  avenor plugin verify ./bin/avenor-plugin-mine --backend mine --json`,
	"probe": `  avenor probe --out probe.ndjson
  avenor probe --out probe.ndjson --dir ~/src/app --timeout 2m`,
	"stable": `  avenor stable --control-socket /tmp/stable.sock &
  avenor stable --control-socket /tmp/stable.sock --max-runtimes 4 --idle-timeout 10m
  avenor stable --control-socket /tmp/stable.sock --http-debug 127.0.0.1:8089 --http-debug-token-file tok
  avenor stable --control-socket /tmp/stable.sock --warm opencode-acp=2,dir=$PWD   # spawns here skip the cold start`,
	"version": `  avenor version
  avenor version --json | jq -r .version`,
}

// applyExamples sets the Example of every command of the tree that has
// none of its own and is listed in examples.
func applyExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.Name()), " ")
		if ex, ok := examples[path]; ok && c.Example == "" && !strings.Contains(c.Long, "Examples:") {
			c.Example = ex
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
