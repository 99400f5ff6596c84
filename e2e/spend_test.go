//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestSpendClaude: spend limits with the real Claude Code (claude-stream)
// offline, its usage and cost from the fake LLM's answers: a token and a
// cost limit end avenor run BLOCKED/5 with budget_reached after the turn
// that passed them (overshoot at most that turn), a later --resume
// continues the session; in avenor stable the runtime parks idle and
// set_budget with resume continues the same session.
func TestSpendClaude(t *testing.T) {
	rt := claudeStream
	installClaude(t)
	ok := fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply { return fakellm.Text("OK") }}
	for _, tc := range []struct{ name, flag, value, limit string }{
		{"tokens", "--spend-tokens", "1", "tokens"},
		{"usd", "--spend-usd", "0.0000001", "usd"},
	} {
		t.Run("run/"+tc.name, func(t *testing.T) {
			w := newWorld(t, rt, ok)
			res, evs, s := w.startAvenor("run", "--prompt", "Say OK.", tc.flag, tc.value).finish()
			if res.code != 5 || s.status != "BLOCKED" || s.fields["STOP_REASON"] != "budget_reached" {
				t.Fatalf("want exit 5, BLOCKED, budget_reached; got %v, sentinel %q", res, s.raw)
			}
			checkSessionEnd(t, "run", evs, "budget_reached")
			var reached event
			for _, e := range evs {
				if e.name() == "avenor.budget.reached" {
					reached = e
				}
			}
			if reached == nil || reached.str("limit") != tc.limit {
				t.Fatalf("avenor.budget.reached %v, want limit %s", reached, tc.limit)
			}
			t.Logf("claude-stream, %s limit %s: stopped after one turn having spent %v tokens, $%v (overshoot: that one turn)",
				tc.name, tc.value, reached["spent_tokens"], reached["spent_usd"])
			if tc.name != "tokens" {
				return
			}
			res, evs, s2 := w.startAvenor("resume", "--prompt", "Say OK again.", "--resume", s.session, "--spend-tokens", "100000000").finish()
			checkDone(t, "resume", res, evs, s2)
			if s2.session != s.session {
				t.Errorf("the resumed run's session %q, want %q", s2.session, s.session)
			}
		})
	}
	t.Run("stable/set_budget", func(t *testing.T) { testSpendStableClaude(t, rt, ok) })
	t.Run("context", func(t *testing.T) {
		w := newWorld(t, rt, ok)
		res, evs, s := w.startAvenor("run", "--prompt", "Say OK.", "--context-warn-pct", "50").finish()
		checkDone(t, "run", res, evs, s)
		var ctx event
		for _, e := range evs {
			if e.name() == "avenor.context" {
				ctx = e
			}
		}
		used, _ := ctx["used_tokens"].(float64)
		window, _ := ctx["window_tokens"].(float64)
		if ctx == nil || used <= 0 || window < 100000 {
			t.Fatalf("avenor.context %v, want the used tokens of the last model call and the model's window", ctx)
		}
		t.Logf("claude-stream context: %v of %v tokens (%v%%)", used, window, ctx["used_pct"])
	})
}

func testSpendStableClaude(t *testing.T, rt *runtimeSpec, cfg fakellm.Config) {
	w := newWorld(t, rt, cfg)
	sock := filepath.Join(w.tmp, "s.sock")
	sup := w.start("stable", "--control-socket", sock)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := dialStable(t, ctx, sock)
	defer c.Close()
	parked := func(id, what string, cond func(client.Runtime) bool) client.Runtime {
		t.Helper()
		return waitRuntime(t, ctx, c, id, what, func(r client.Runtime) bool { return r.Parked && r.ExitCode != nil && cond(r) })
	}
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: rt.backend, Dir: w.work, Prompt: "Say OK.", SpendTokens: client.Int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	paused := parked(sp.RuntimeID, "at the limit", func(r client.Runtime) bool { return true })
	if paused.Status != "idle" || *paused.ExitCode != 5 || paused.StopReason != "budget_reached" {
		t.Fatalf("want idle, exit 5, budget_reached: %s", paused.Raw)
	}
	if _, err := c.SetBudget(ctx, client.SetBudgetParams{RuntimeID: sp.RuntimeID, SpendTokens: client.Int64(100000000), Resume: true}); err != nil {
		t.Fatalf("set_budget: %v", err)
	}
	resumed := parked(sp.RuntimeID, "resumed", func(r client.Runtime) bool { return *r.ExitCode == 0 })
	if resumed.SessionID != paused.SessionID || resumed.FinalOutput != "OK" {
		t.Errorf("after set_budget: %s, want session %s with final_output OK", resumed.Raw, paused.SessionID)
	}
	if last := w.llm.MainRequests(); len(last) == 0 || !last[len(last)-1].Contains("spend limit that paused you was raised") {
		t.Errorf("the continue prompt did not reach the model")
	}
	if err := c.Shutdown(ctx, "graceful"); err != nil {
		t.Logf("shutdown: %v", err)
	}
	sup.wait()
	sup.checkNoLeftovers()
}
