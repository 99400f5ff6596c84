package hosttest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// spendRun runs script under avenor run with the spend flags and returns
// the result, the events and the sentinel's text.
func spendRun(t *testing.T, w *world, env []string, script string, flags ...string) (result, []event, string) {
	t.Helper()
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	args := append([]string{"--backend", "scripted", "--prompt", script, "--on-event", evPath,
		"--sentinel-file", sentPath, "--run-id", "feedfacecafe0050"}, flags...)
	res := w.runEnv(env, args...)
	return res, readEvents(t, evPath), readFile(t, sentPath)
}

// TestRunSpendBlocksThenResumes: avenor run ends BLOCKED/5 budget_reached
// at a token limit, after its avenor.budget.reached; a later --resume with
// room continues the same session.
func TestRunSpendBlocksThenResumes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	res, evs, sent := spendRun(t, w, nil, spendTurn, "--spend-tokens", "50")
	if res.code != 5 {
		t.Fatalf("want exit 5 at the limit; got %v", res)
	}
	end := lastSessionEnd(t, evs)
	session := end.str("session_id")
	if end.str("stop_reason") != "budget_reached" || !strings.HasPrefix(sent, "BLOCKED\n") || !strings.Contains(sent, "STOP_REASON=budget_reached\n") {
		t.Errorf("session.end %v, sentinel %q: want budget_reached, BLOCKED", end, sent)
	}
	reached := only(evs, "avenor.budget.reached")
	if len(reached) != 1 || reached[0].str("limit") != "tokens" {
		t.Fatalf("avenor.budget.reached %v, want one naming tokens", reached)
	}
	if n, _ := reached[0].num("spent_tokens"); n != 100 {
		t.Errorf("spent_tokens %v, want 100", n)
	}
	res, evs, sent = spendRun(t, w, nil, "say again\nusage in=1 out=1", "--spend-tokens", "500", "--resume", session)
	if res.code != 0 || !strings.HasPrefix(sent, "DONE\n") {
		t.Fatalf("the resumed run: %v, sentinel %q; want DONE", res, sent)
	}
	if sid := lastSessionEnd(t, evs).str("session_id"); sid != session {
		t.Errorf("the resumed run's session %q, want %q", sid, session)
	}
}

// TestRunSpendWall: a wall limit under interrupt cancels the turn in
// flight (budget_reached, 5) long before the turn would end; under finish
// the turn ends on its own first.
func TestRunSpendWall(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	start := time.Now()
	res, evs, _ := spendRun(t, w, nil, "say start\nsleep 60s\nsay never", "--spend-wall", "1s", "--spend-policy", "interrupt")
	took := time.Since(start)
	if res.code != 5 || lastSessionEnd(t, evs).str("stop_reason") != "budget_reached" {
		t.Fatalf("interrupt: %v, want exit 5 budget_reached", res)
	}
	if took > 40*time.Second {
		t.Errorf("interrupt took %v: the 60 s turn was not cancelled", took)
	}
	if r := only(evs, "avenor.budget.reached"); len(r) != 1 || r[0].str("limit") != "wall" || r[0].str("policy") != "interrupt" {
		t.Errorf("avenor.budget.reached %v, want one wall/interrupt", r)
	}
	t.Logf("wall 1s under interrupt: the run ended after %v", took)

	w2 := newWorld(t)
	res, evs, _ = spendRun(t, w2, nil, "say start\nsleep 2s\nsay finished", "--spend-wall", "1s")
	end := lastSessionEnd(t, evs)
	if res.code != 5 || end.str("stop_reason") != "budget_reached" || end.str("final_output") != "startfinished" {
		t.Errorf("finish: %v, session.end %v; want the turn finished, then budget_reached", res, end)
	}
}

// TestRunSpendBadInput: bad spend flags and limits the backend cannot be
// held to are refused with a clear error, FAILED, and nothing runs.
func TestRunSpendBadInput(t *testing.T) {
	t.Parallel()
	cases := []badRunCase{
		{name: "unparsable tokens", flags: []string{"--spend-tokens", "lots"}, want: `invalid argument "lots" for "--spend-tokens"`, code: 2},
		{name: "negative tokens", flags: []string{"--spend-tokens", "-5"}, want: "negative"},
		{name: "unparsable usd", flags: []string{"--spend-usd", "cheap"}, want: `invalid number "cheap"`},
		{name: "negative usd", flags: []string{"--spend-usd", "-1"}, want: "negative"},
		{name: "unparsable wall", flags: []string{"--spend-wall", "soon"}, want: `invalid argument "soon" for "--spend-wall"`, code: 2},
		{name: "negative wall", flags: []string{"--spend-wall", "-5s"}, want: "negative"},
		{name: "unparsable wall in the config", config: "spend_wall = \"soon\"\n", want: "spend_wall: invalid duration"},
		{name: "unknown policy", flags: []string{"--spend-tokens", "10", "--spend-policy", "explode"}, want: `--spend-policy: spend policy "explode" is not one: use finish or interrupt`},
		{name: "unknown scope", flags: []string{"--spend-tokens", "10", "--spend-scope", "galaxy"}, want: `spend scope "galaxy" is not one`},
		{name: "policy without a limit", flags: []string{"--spend-policy", "interrupt"}, want: "need a limit"},
		{name: "bad price entry", flags: []string{"--spend-usd", "1", "--spend-prices", "m1=abc:1"}, want: `--spend-prices: entry "m1=abc:1": input price`},
		{name: "price entry without prices", config: "spend_prices = \"m1\"\nspend_usd = 1\n", want: `entry "m1": want MODEL=INPUT:OUTPUT`},
		{name: "cost limit with no price", flags: []string{"--spend-usd", "1", "--model", "m2"}, env: []string{"SCRIPTED_USAGE=tokens"}, want: "no price for the model m2"},
		{name: "token limit without usage", flags: []string{"--spend-tokens", "10"}, env: []string{"SCRIPTED_USAGE=none"}, want: "reports no token usage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkBadRun(t, "feedfacecafe0051", tc)
		})
	}
}

// TestStableSpendTreeCountsChildren: a runtime with spend_scope tree
// counts the turns of a child spawned under it (parent_id): the child's
// 200 tokens and its own 100 pass its 250, and its next prompt ends
// budget_reached without a turn.
func TestStableSpendTreeCountsChildren(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.startStable("spendtree", nil).client()
	parent := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: spendTurn,
		SpendTokens: client.Int64(250), SpendScope: "tree"})
	waitParked(t, c, parent.RuntimeID)
	child := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: spendTurn, ParentID: parent.RuntimeID})
	waitParked(t, c, child.RuntimeID)
	promptParked(t, c, child.RuntimeID, spendTurn)
	if s := spendOf(t, runtimeOf(t, c, parent.RuntimeID)); s["spent_tokens"] != 300.0 || s["scope"] != "tree" {
		t.Fatalf("parent's spend %v, want 300 tokens counted (100 own, 200 the child's)", s)
	}
	rt := promptParked(t, c, parent.RuntimeID, spendTurn)
	checkBudgetReached(t, rt, "tokens")
}

// TestSpendNestedCountsIntoTheTree: what a tree-scoped runtime starts
// inside itself finds its ledger in AVENOR_SPEND_LEDGER (the runtime's
// processes see it) and counts its own turns into it: an avenor run and
// an avenor stable started with it, neither with limits of its own.
func TestSpendNestedCountsIntoTheTree(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// The tree's root: its runtime writes the ledger chain it was given.
	res, _, sent := spendRun(t, w, nil, spendTurn+"\nshell printenv AVENOR_SPEND_LEDGER > chain.txt", "--spend-tokens", "1000", "--spend-scope", "tree")
	if res.code != 0 || !strings.HasPrefix(sent, "DONE\n") {
		t.Fatalf("root: %v, %q", res, sent)
	}
	chain := strings.TrimSpace(readFile(t, filepath.Join(w.work, "chain.txt")))
	if !strings.HasSuffix(chain, "ledger.json") || !filepath.IsAbs(chain) {
		t.Fatalf("the root's runtime saw AVENOR_SPEND_LEDGER=%q, want its ledger file", chain)
	}

	// A ledger a tree shares, as a runtime started inside the tree sees it.
	ledger := filepath.Join(w.tmp, "tree-ledger.json")
	env := []string{"AVENOR_SPEND_LEDGER=" + ledger}
	if res := w.runEnv(env, "--backend", "scripted", "--prompt", spendTurn); res.code != 0 {
		t.Fatalf("nested avenor run: %v", res)
	}
	c := w.startStable("nested", env).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: spendTurn})
	waitParked(t, c, sp.RuntimeID)
	if got := readFile(t, ledger); !strings.Contains(got, `"tokens":200`) {
		t.Errorf("the tree's ledger %q, want 200 tokens (a nested run's 100 and a nested supervisor's runtime's 100)", got)
	}
}
