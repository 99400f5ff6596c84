package hosttest

import (
	"strings"
	"testing"
)

// TestContextUse: with --context-warn-pct, avenor.context follows each
// turn where the runtime reports its window, an avenor.warning the first
// turn past the threshold; without it, nothing of it is written and
// session.end carries no context fields.
func TestContextUse(t *testing.T) {
	t.Parallel()
	const script = "say hi\nusage in=850 out=10 window=1000"
	w := newWorld(t)
	evPath := w.path("events.ndjson")
	res := w.runEnv(nil, "--backend", "scripted", "--prompt", script, "--on-event", evPath, "--context-warn-pct", "80")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	ctx := only(evs, "avenor.context")
	if len(ctx) != 1 {
		t.Fatalf("want one avenor.context, got %v", ctx)
	}
	if u, _ := ctx[0].num("used_tokens"); u != 850 {
		t.Errorf("used_tokens %v, want 850", ctx[0]["used_tokens"])
	}
	if wt, _ := ctx[0].num("window_tokens"); wt != 1000 {
		t.Errorf("window_tokens %v, want 1000", ctx[0]["window_tokens"])
	}
	if p, _ := ctx[0].num("used_pct"); p != 85 {
		t.Errorf("used_pct %v, want 85", ctx[0]["used_pct"])
	}
	warns := only(evs, "avenor.warning")
	if len(warns) != 1 || warns[0].str("source") != "context" || !strings.Contains(warns[0].str("message"), "85.0% full") {
		t.Errorf("avenor.warning %v, want one from context at 85%%", warns)
	}
	end := lastSessionEnd(t, evs)
	if _, ok := end["context_used_tokens"]; ok {
		t.Errorf("session.end carries the context fields: %v", end)
	}

	w2 := newWorld(t)
	evPath = w2.path("events.ndjson")
	if res := w2.runEnv(nil, "--backend", "scripted", "--prompt", script, "--on-event", evPath); res.code != 0 {
		t.Fatalf("run without the option: %v", res)
	}
	evs = readEvents(t, evPath)
	if n := len(only(evs, "avenor.context")) + len(only(evs, "avenor.warning")); n != 0 {
		t.Errorf("without --context-warn-pct: %d context events or warnings", n)
	}
	if end := lastSessionEnd(t, evs); end["context_window_tokens"] != nil || end["context_used_tokens"] != nil {
		t.Errorf("session.end carries the context fields: %v", end)
	}

	w3 := newWorld(t)
	if res := w3.runEnv(nil, "--backend", "scripted", "--prompt", "say hi", "--context-warn-pct", "101"); res.code != 1 || !strings.Contains(res.stderr, "--context-warn-pct 101 is out of range") {
		t.Errorf("--context-warn-pct 101: %v", res)
	}
}
