//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// claudeChannel is Claude Code 2.1.332 driven by the claude-channel
// backend (tmux, the default launcher), offline against the fake LLM.
//
// Channels are behind the GrowthBook feature tengu_harbor in this build
// ("channels feature is not currently available" otherwise). Claude Code
// reads features from the cache in ~/.claude.json (cachedGrowthBookFeatures)
// only while telemetry is on, so this world seeds the flag and drops
// DISABLE_TELEMETRY and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC (the
// network calls that enables fail fast: the sandbox has no route out, and
// ANTHROPIC_BASE_URL is the fake).
var claudeChannel = &runtimeSpec{
	name: "claude", backend: "claude-channel", model: "claude-sonnet-4-5",
	bin: func() string { return claudeBin },
	setup: func(w *world) {
		claudeStream.setup(w)
		path := filepath.Join(w.home, ".claude.json")
		var seed map[string]any
		data, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(data, &seed) != nil {
			w.t.Fatalf("reading the seeded %s: %v", path, err)
		}
		seed["cachedGrowthBookFeatures"] = map[string]any{"tengu_harbor": true}
		b, _ := json.MarshalIndent(seed, "", "  ")
		w.writeFile(path, string(b))
		w.env = slices.DeleteFunc(w.env, func(kv string) bool {
			return strings.HasPrefix(kv, "DISABLE_TELEMETRY=") || strings.HasPrefix(kv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=")
		})
	},
}

// channelFinish plays the model: Claude Code 2.1.332 defers MCP tools
// behind ToolSearch, so it first searches for avenor_finish, then calls it
// (its name carries the random server name), then answers DONE.
func channelFinish(r *fakellm.Request) fakellm.Reply {
	last := ""
	if res := r.LastMessage().ToolResults; len(res) > 0 {
		last = res[0].ID
	}
	if last == "toolu_finish" {
		return fakellm.Text("DONE")
	}
	for _, tl := range r.Tools {
		if strings.HasSuffix(tl.Name, "__avenor_finish") {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "toolu_finish", Name: tl.Name,
				Args: map[string]any{"status": "done", "summary": "said hi through the channel", "files_changed": []string{}}}}}
		}
	}
	if _, ok := r.Tool("ToolSearch"); ok && last != "toolu_search" {
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "toolu_search", Name: "ToolSearch",
			Args: map[string]any{"query": "avenor_finish", "max_results": 5}}}}
	}
	var offered []string
	for _, tl := range r.Tools {
		offered = append(offered, tl.Name)
	}
	return fakellm.Text("no avenor_finish tool was offered: " + strings.Join(offered, " "))
}

// TestClaudeChannel: one prompt through the real Claude Code with its
// development channel: the sidecar (this avenor, from .mcp.json) registers,
// the model finds avenor_finish with ToolSearch and calls it (Claude asks
// permission for the MCP tool; --auto-approve allows it), and the run ends with the
// finish's status and summary; .mcp.json is gone afterwards.
func TestClaudeChannel(t *testing.T) {
	installClaude(t)
	w := newWorld(t, claudeChannel, fakellm.Config{Script: channelFinish})
	run := w.startAvenor("channel", "--prompt", "say hi", "--auto-approve")
	res, evs, s := run.finish()
	checkDone(t, "channel", res, evs, s)
	for _, typ := range []string{"agent.channel_ready", "agent.prompt_submitted", "agent.prompt_queued", "agent.finish"} {
		if len(only(evs, typ)) == 0 {
			t.Errorf("no %s event: %v", typ, names(evs))
		}
	}
	if starts := only(evs, "session.start"); len(starts) != 1 || starts[0]["dangerously_load"] != true || !strings.HasPrefix(starts[0].str("broker_url"), "http://127.0.0.1:") {
		t.Errorf("session.start %v", starts)
	}
	end := only(evs, "session.end")
	if len(end) != 1 || end[0].str("status") != "done" || end[0].str("summary") != "said hi through the channel" {
		t.Errorf("session.end %v", end)
	}
	// Claude asks before it runs the MCP tool. 2.1.332 relays that prompt
	// over the channel only where its allow_channels policy is on (not
	// offline), so here the backend answers the dialog from the screen
	// after channelPermGrace; either way there is exactly one request.
	perms := only(evs, "permission.request")
	if len(perms) != 1 || !slices.Contains([]string{"channel", "tmux", "pty"}, perms[0].str("source")) {
		t.Errorf("%d permission requests (sources %v), want one for the MCP tool: %v", len(perms), sources(perms), perms)
	} else {
		t.Logf("the MCP tool's permission prompt came via %s", perms[0].str("source"))
	}
	if fileExists(filepath.Join(w.work, ".mcp.json")) {
		t.Error(".mcp.json left in the project")
	}
}

func sources(evs []event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.str("source"))
	}
	return out
}
