//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestAutoCompactCodex: --auto-compact-pct with the real Codex CLI
// offline. Its window is set to 1,000 tokens in config.toml so that the
// fake LLM's 15-token turn (1.5%) crosses --auto-compact-pct 1: after the
// turn the plugin sends thread/compact/start, Codex summarises through the
// fake LLM, and the host writes avenor.context.compacted before the
// turn's session.end.
func TestAutoCompactCodex(t *testing.T) {
	codex.bin = func() string { return codexBin(t) }
	w := newWorld(t, codex, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("OK") }})
	cfg := filepath.Join(w.path("codex-home"), "config.toml")
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.writeFile(cfg, "model_context_window = 1000\n"+string(body))
	res, evs, s := w.startAvenor("run", "--prompt", "Say OK.", "--auto-compact-pct", "1").finish()
	checkDone(t, "run", res, evs, s)
	var names []string
	var comp event
	for _, e := range evs {
		names = append(names, e.name())
		if e.name() == "avenor.context.compacted" {
			comp = e
		}
	}
	if comp == nil {
		t.Fatalf("no avenor.context.compacted; events %v", names)
	}
	before, _ := comp["before_tokens"].(float64)
	window, _ := comp["window_tokens"].(float64)
	if before <= 0 || window <= 0 || window > 1000 {
		t.Errorf("avenor.context.compacted %v: want before_tokens > 0 of the configured window (Codex keeps 5%% of 1,000 back)", comp)
	}
	if _, ok := comp["after_tokens"]; ok {
		t.Errorf("avenor.context.compacted %v: after_tokens from the summarising call, which is not the context after", comp)
	}
	summarised := false
	for _, r := range w.llm.Requests() {
		summarised = summarised || strings.Contains(r.LastUserText(), "CONTEXT CHECKPOINT COMPACTION")
	}
	if !summarised {
		t.Errorf("the fake LLM was never asked to summarise")
	}
	if ci, ki, ei := slices.Index(names, "avenor.context"), slices.Index(names, "avenor.context.compacted"), slices.Index(names, "session.end"); ci > ki || ki > ei {
		t.Errorf("events %v: want avenor.context, avenor.context.compacted, session.end in that order", names)
	}
	t.Logf("codex compaction: %v", comp)
}

// compactSummary is the fake LLM's answer to a summarising request.
const compactSummary = "<summary>SUMMARY-7F3A: the user asked for OK</summary>"

// TestAutoCompactClaude: --auto-compact-pct with the real Claude Code
// (claude-stream) offline. The fake LLM reports 150,000 input tokens, 75%
// of the model's 200,000 window, past --auto-compact-pct 50: the plugin
// sends /compact as a stream-json user message, Claude Code asks the fake
// LLM for a summary, and the host writes avenor.context.compacted before
// the turn's session.end. The resumed session's next model call carries
// the summary instead of the conversation.
func TestAutoCompactClaude(t *testing.T) {
	installClaude(t)
	w := newWorld(t, claudeStream, fakellm.Config{Script: func(r *fakellm.Request) fakellm.Reply {
		if r.Contains("CRITICAL: Respond with TEXT ONLY") {
			return fakellm.Reply{Text: compactSummary, InputTokens: 150000}
		}
		return fakellm.Reply{Text: "OK", InputTokens: 150000}
	}})
	res, evs, s := w.startAvenor("run", "--prompt", "Say OK.", "--auto-compact-pct", "50").finish()
	checkDone(t, "run", res, evs, s)
	var names []string
	var comp event
	for _, e := range evs {
		names = append(names, e.name())
		if e.name() == "avenor.context.compacted" {
			comp = e
		}
	}
	if comp == nil {
		t.Fatalf("no avenor.context.compacted; events %v", names)
	}
	if before, _ := comp["before_tokens"].(float64); before < 150000 || comp["window_tokens"] != 200000.0 {
		t.Errorf("avenor.context.compacted %v: want before_tokens 150,000+ of 200,000", comp)
	}
	if _, ok := comp["after_tokens"]; ok {
		t.Errorf("avenor.context.compacted %v: after_tokens from the summarising call, which is not the context after", comp)
	}
	if ci, ki, ei := slices.Index(names, "avenor.context"), slices.Index(names, "avenor.context.compacted"), slices.Index(names, "session.end"); ci > ki || ki > ei {
		t.Errorf("events %v: want avenor.context, avenor.context.compacted, session.end in that order", names)
	}
	if end := evs[len(evs)-1]; end["final_output"] != "OK" {
		t.Errorf("session.end %v: want the turn's own answer, not the compaction's", end)
	}
	before := len(w.llm.Requests())
	res, evs, s2 := w.startAvenor("resume", "--prompt", "Say OK again.", "--resume", s.session).finish()
	checkDone(t, "resume", res, evs, s2)
	reqs := w.llm.Requests()[before:]
	if len(reqs) == 0 || !reqs[0].Contains("SUMMARY-7F3A") {
		t.Errorf("the resumed session's first model call does not carry the compaction's summary")
	}
}

// TestAutoCompactRefused: a backend that does not declare the compaction
// capability (gemini-acp) refuses --auto-compact-pct before anything
// starts.
func TestAutoCompactRefused(t *testing.T) {
	w := newWorld(t, gemini, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", "Say OK.", "--auto-compact-pct", "50")
	res := run.p.wait()
	if s := readSentinel(t, run.sentinel); res.code != 1 || s.status != "FAILED" || !strings.Contains(res.stderr, "backend gemini-acp cannot compact its context (capability compaction)") {
		t.Fatalf("want refused, exit 1, FAILED; got %v, sentinel %q", res, s.raw)
	}
	for _, e := range readEvents(t, run.events) {
		if e.name() == "avenor.turn.start" {
			t.Errorf("a turn started: %v", e)
		}
	}
	if n := len(w.llm.Requests()); n != 0 {
		t.Errorf("%d requests reached the fake LLM", n)
	}
}
