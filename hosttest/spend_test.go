package hosttest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// Spend limits that pause (docs/unattended.md#spend-limits) as a harness
// sees them: a limit reached mid-run ends the turn at its boundary with
// budget_reached (exit 5, BLOCKED), overshooting by at most one turn; the
// stable runtime parks idle with its session; set_budget with resume
// continues that session with a new turn.

// spendTurn is one turn of 100 tokens (and, with cost, $0.10).
const (
	spendTurn     = "say turn\nusage in=60 out=40"
	spendCostTurn = "say turn\nusage in=60 out=40 cost=0.10"
	// spendProse is what a continue prompt (not a script) runs.
	spendProse = "SCRIPTED_PROSE_SCRIPT=say continued\nusage in=6 out=4"
)

// spendOf is a runtime's spend entry.
func spendOf(t *testing.T, rt client.Runtime) map[string]any {
	t.Helper()
	var e struct {
		Spend map[string]any `json:"spend"`
	}
	if err := json.Unmarshal(rt.Raw, &e); err != nil || e.Spend == nil {
		t.Fatalf("status has no spend object: %s", rt.Raw)
	}
	return e.Spend
}

// waitParked waits for the runtime's run number runs to have parked.
func waitParked(t *testing.T, c *client.Client, id string) client.Runtime {
	t.Helper()
	return waitRuntime(t, c, id, 60*time.Second, "parked", func(rt client.Runtime) bool { return rt.Parked && rt.ExitCode != nil })
}

// promptParked sends a follow-up and waits for its run to park again.
func promptParked(t *testing.T, c *client.Client, id, text string) client.Runtime {
	t.Helper()
	before := runtimeOf(t, c, id).LatestSeq
	if err := c.Prompt(ctxT(t, 30*time.Second), text, id); err != nil {
		t.Fatalf("prompt %s: %v", id, err)
	}
	return waitRuntime(t, c, id, 60*time.Second, "parked after the prompt", func(rt client.Runtime) bool {
		return rt.Parked && rt.ExitCode != nil && rt.LatestSeq > before
	})
}

// checkBudgetReached checks a runtime paused at a limit: idle, exit 5,
// budget_reached, its sentinel BLOCKED, the event naming the limit.
func checkBudgetReached(t *testing.T, rt client.Runtime, limit string) event {
	t.Helper()
	if rt.Status != "idle" || rt.ExitCode == nil || *rt.ExitCode != 5 || rt.StopReason != "budget_reached" {
		t.Fatalf("want idle, exit 5, budget_reached; got %s", rt.Raw)
	}
	if body := readFile(t, rt.SentinelFile); !strings.HasPrefix(body, "BLOCKED\n") || !strings.Contains(body, "STOP_REASON=budget_reached\n") {
		t.Errorf("sentinel %q, want BLOCKED with STOP_REASON=budget_reached", body)
	}
	reached := only(readEvents(t, rt.EventPath), "avenor.budget.reached")
	if len(reached) == 0 {
		t.Fatalf("no avenor.budget.reached in the log")
	}
	last := reached[len(reached)-1]
	if last.str("limit") != limit || last.str("policy") != "finish" {
		t.Errorf("avenor.budget.reached %v, want limit %s, policy finish", last, limit)
	}
	return last
}

// TestStableSpendTokenLimitPausesAndResumes: 100-token turns under a
// 250-token limit: the third turn ends budget_reached (overshoot 50 tokens,
// less than one turn); a follow-up runs no turn; set_budget with resume
// continues the same session with a new turn whose end rewrites the
// sentinel.
func TestStableSpendTokenLimitPausesAndResumes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("spend", []string{spendProse}).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: spendTurn, SpendTokens: client.Int64(250)})
	rt := waitParked(t, c, sp.RuntimeID)
	if *rt.ExitCode != 0 {
		t.Fatalf("first turn (100 of 250 tokens) did not end well: %s", rt.Raw)
	}
	session := rt.SessionID
	promptParked(t, c, sp.RuntimeID, spendTurn)
	rt = promptParked(t, c, sp.RuntimeID, spendTurn)
	ev := checkBudgetReached(t, rt, "tokens")
	spent, _ := ev.num("spent_tokens")
	overshoot := spent - 250
	t.Logf("token limit 250, 100-token turns: spent %v at the limit, overshoot %v tokens (one turn is 100)", spent, overshoot)
	if overshoot < 0 || overshoot > 100 {
		t.Errorf("overshoot %v tokens, want 0..100 (at most one turn)", overshoot)
	}
	if s := spendOf(t, rt); s["reached"] != "tokens" || s["spend_tokens"] != 250.0 {
		t.Errorf("status spend %v, want reached tokens with spend_tokens 250", s)
	}

	// A follow-up of a paused runtime runs no turn: it ends at once.
	starts := len(only(readEvents(t, rt.EventPath), "avenor.turn.start"))
	rt = promptParked(t, c, sp.RuntimeID, spendTurn)
	checkBudgetReached(t, rt, "tokens")
	if n := len(only(readEvents(t, rt.EventPath), "avenor.turn.start")); n != starts {
		t.Errorf("a follow-up at the limit started a turn (%d turn starts, want %d)", n, starts)
	}

	// set_budget without room to resume is refused; with it, the session goes on.
	if _, err := c.SetBudget(ctxT(t, 30*time.Second), client.SetBudgetParams{RuntimeID: sp.RuntimeID, SpendTokens: client.Int64(300), Resume: true}); err == nil ||
		!strings.Contains(err.Error(), "still at its tokens limit") {
		t.Errorf("set_budget 300 (spent 300) with resume: %v, want still at its tokens limit", err)
	}
	res, err := c.SetBudget(ctxT(t, 30*time.Second), client.SetBudgetParams{RuntimeID: sp.RuntimeID, SpendTokens: client.Int64(1000), Resume: true})
	if err != nil || !res.Resumed {
		t.Fatalf("set_budget 1000 with resume: %+v, %v", res, err)
	}
	rt = waitRuntime(t, c, sp.RuntimeID, 60*time.Second, "parked after the resume", func(rt client.Runtime) bool {
		return rt.Parked && rt.ExitCode != nil && *rt.ExitCode == 0
	})
	if rt.SessionID != session || rt.Status != "idle" || rt.FinalOutput != "continued" {
		t.Errorf("after the resume: %s, want session %s idle with final_output continued", rt.Raw, session)
	}
	if body := readFile(t, rt.SentinelFile); !strings.HasPrefix(body, "DONE\n") || !strings.Contains(body, "SESSION="+session+"\n") {
		t.Errorf("sentinel after the resume %q, want DONE on session %s", body, session)
	}
}

// TestStableSpendCostLimit: a cost limit of $0.25 over turns the runtime
// prices at $0.10 pauses the third; and, for a model the runtime does not
// price, the config's price table does.
func TestStableSpendCostLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// 60 in, 40 out at $1000 and $1000 per million: $0.10 a turn.
	w.userConfig("spend_prices = \"priced-model=1000:1000\"\n")
	c := w.startStable("spendusd", []string{"SCRIPTED_USAGE=tokens"}).client()
	for _, tc := range []struct {
		name, model, turn string
		env               []string
	}{
		{name: "price table", model: "priced-model", turn: spendTurn},
	} {
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Model: tc.model, Prompt: tc.turn, SpendUSD: client.Float64(0.25)})
		waitParked(t, c, sp.RuntimeID)
		promptParked(t, c, sp.RuntimeID, tc.turn)
		rt := promptParked(t, c, sp.RuntimeID, tc.turn)
		ev := checkBudgetReached(t, rt, "usd")
		spent, _ := ev.num("spent_usd")
		t.Logf("%s: cost limit $0.25, $0.10 turns: spent $%.2f at the limit, overshoot $%.2f", tc.name, spent, spent-0.25)
		if spent < 0.25 || spent > 0.35+1e-9 {
			t.Errorf("%s: spent $%v at the limit, want 0.25..0.35 (at most one turn over)", tc.name, spent)
		}
	}
}

// TestStableSpendReportedCost: the runtime's own cost (cost_usd) counts.
func TestStableSpendReportedCost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("spendcost", nil).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: spendCostTurn, SpendUSD: client.Float64(0.25)})
	waitParked(t, c, sp.RuntimeID)
	promptParked(t, c, sp.RuntimeID, spendCostTurn)
	rt := promptParked(t, c, sp.RuntimeID, spendCostTurn)
	ev := checkBudgetReached(t, rt, "usd")
	if spent, _ := ev.num("spent_usd"); spent < 0.25 || spent > 0.35+1e-9 {
		t.Errorf("spent $%v at the limit, want 0.25..0.35", spent)
	}
}

// TestStableSpendBadInput: bad limits are -32602, a limit the backend
// cannot be held to is refused, and nothing runs.
func TestStableSpendBadInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("spendbad", []string{"SCRIPTED_USAGE=none"}).client()
	for _, bad := range []struct {
		p    client.SpawnParams
		want string
		code int
	}{
		{client.SpawnParams{SpendTokens: client.Int64(-1)}, "spend_tokens must not be negative", -32602},
		{client.SpawnParams{SpendUSD: client.Float64(-0.5)}, "spend_usd must be a non-negative number", -32602},
		{client.SpawnParams{SpendWall: "soon"}, "spend_wall", -32602},
		{client.SpawnParams{SpendWall: "-5s"}, "spend_wall", -32602},
		{client.SpawnParams{SpendTokens: client.Int64(10), SpendPolicy: "explode"}, `spend policy "explode" is not one`, -32602},
		{client.SpawnParams{SpendTokens: client.Int64(10), SpendScope: "galaxy"}, `spend scope "galaxy" is not one`, -32602},
		{client.SpawnParams{SpendTokens: client.Int64(10)}, "reports no token usage", -32000},
		{client.SpawnParams{SpendUSD: client.Float64(1)}, "no price for the model", -32000},
	} {
		p := bad.p
		p.Backend, p.Dir, p.Prompt = "scripted", w.work, "say hi"
		_, err := c.Spawn(ctxT(t, 30*time.Second), p)
		if re := rpcError(t, err); re.Code != bad.code || !strings.Contains(re.Error(), bad.want) {
			t.Errorf("spawn %+v: %v, want %d with %q", bad.p, re, bad.code, bad.want)
		}
	}
	if list, err := c.List(ctxT(t, 30*time.Second)); err != nil || len(list) != 0 {
		t.Errorf("refused spawns left runtimes: %v, %v", list, err)
	}
}
