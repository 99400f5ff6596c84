package runner

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Spend limits that pause (docs/unattended.md#spend-limits): --spend-tokens,
// --spend-usd and --spend-wall end the run's turn with stop reason
// budget_reached (exit 5, sentinel BLOCKED) once what it spent reaches a
// limit; a stable runtime parks with its session, and set_budget raises the
// limit and may continue it.

// SpendPolicy is what a reached limit does to the turn in flight.
type SpendPolicy string

// Spend policies (--spend-policy).
const (
	// SpendFinish lets the turn end on its own and ends the run at that
	// boundary: the overshoot is at most the turn in which the limit passed.
	SpendFinish SpendPolicy = "finish"
	// SpendInterrupt cancels the turn as soon as the host knows a limit is
	// reached: the wall limit at once; tokens and cost when the runtime
	// reports them, at the end of a turn (no backend reports usage
	// mid-turn), so for those it stops where finish does.
	SpendInterrupt SpendPolicy = "interrupt"
)

// SpendScope is whose spending a limit counts.
type SpendScope string

// Spend scopes (spend_scope).
const (
	// SpendScopeRuntime counts the runtime's own turns.
	SpendScopeRuntime SpendScope = "runtime"
	// SpendScopeTree counts the runtime and every runtime spawned under it,
	// across nested supervisors (a ledger file the tree shares, as the tree
	// budget's).
	SpendScopeTree SpendScope = "tree"
)

// ParseSpendPolicy checks a --spend-policy; "" is finish.
func ParseSpendPolicy(s string) (SpendPolicy, error) {
	switch SpendPolicy(s) {
	case "", SpendFinish:
		return SpendFinish, nil
	case SpendInterrupt:
		return SpendInterrupt, nil
	}
	return "", fmt.Errorf("spend policy %q is not one: use finish or interrupt", s)
}

// ParseSpendScope checks a spend_scope; "" is runtime.
func ParseSpendScope(s string) (SpendScope, error) {
	switch SpendScope(s) {
	case "", SpendScopeRuntime:
		return SpendScopeRuntime, nil
	case SpendScopeTree:
		return SpendScopeTree, nil
	}
	return "", fmt.Errorf("spend scope %q is not one: use runtime or tree", s)
}

// SpendLimits are a run's limits; a zero field is no limit of its kind.
type SpendLimits struct {
	Tokens int64         // input plus output tokens
	USD    float64       // US dollars
	Wall   time.Duration // time spent in turns (parked time does not count)
}

// Any says some limit is set.
func (l SpendLimits) Any() bool { return l.Tokens > 0 || l.USD > 0 || l.Wall > 0 }

// Validate refuses a negative or non-finite limit; name turns a setting's
// key (spend_tokens, spend_usd, spend_wall) into what the user wrote.
func (l SpendLimits) Validate(name func(string) string) error {
	switch {
	case l.Tokens < 0:
		return fmt.Errorf("%s must not be negative, got %d", name("spend_tokens"), l.Tokens)
	case l.USD < 0 || math.IsNaN(l.USD) || math.IsInf(l.USD, 0):
		return fmt.Errorf("%s must be a non-negative number of US dollars, got %v", name("spend_usd"), l.USD)
	case l.Wall < 0:
		return fmt.Errorf("%s must not be negative, got %s", name("spend_wall"), l.Wall)
	}
	return nil
}

// Spent is what a scope spent.
type Spent struct {
	Tokens int64
	USD    float64
	Wall   time.Duration
}

func (s Spent) plus(d Spent) Spent {
	return Spent{Tokens: s.Tokens + d.Tokens, USD: s.USD + d.USD, Wall: s.Wall + d.Wall}
}

// Price is a model's price in US dollars per million tokens, from the
// price table (spend_prices).
type Price struct {
	InputPerMTok, OutputPerMTok float64
}

// Cost is the price of u.
func (p Price) Cost(u sdk.Usage) float64 {
	return (float64(u.InputTokens)*p.InputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// Ledger is where a tree scope's spending adds up: shared by the runtimes
// of the tree. Add returns the tree's total after adding.
type Ledger interface {
	Add(d Spent) (Spent, error)
	Total() (Spent, error)
}

// Spend is a runtime's spend limits and what it spent: one for the
// runtime, shared by all its runs (a stable runtime's follow-ups, a
// restart's fresh runner). Nil is no limit at all.
type Spend struct {
	policy SpendPolicy
	scope  SpendScope
	price  *Price
	ledger Ledger // tree scope; nil: the runtime's own spending
	// upstream are the ledgers of the tree-scoped runtimes this one runs
	// under (AVENOR_SPEND_LEDGER): its spending adds to them too.
	upstream []Ledger

	onClose func()

	mu     sync.Mutex
	limits SpendLimits
	own    Spent
	tree   Spent // the ledger's last total
}

// NewSpend is a runtime's spend limits. price is the model's entry of the
// price table (nil: none); ledger is the tree's (scope tree), nil otherwise;
// upstream are the ledgers of the trees the runtime runs in, which count
// its spending whatever its own limits (none: zero limits).
func NewSpend(limits SpendLimits, policy SpendPolicy, scope SpendScope, price *Price, ledger Ledger, upstream []Ledger) *Spend {
	if policy == "" {
		policy = SpendFinish
	}
	if scope == "" {
		scope = SpendScopeRuntime
	}
	return &Spend{limits: limits, policy: policy, scope: scope, price: price, ledger: ledger, upstream: upstream}
}

// OnClose makes f what Close runs (the tree ledger's removal).
func (s *Spend) OnClose(f func()) { s.onClose = f }

// Close ends the spend: its tree ledger is removed. Nil-safe.
func (s *Spend) Close() {
	if s != nil && s.onClose != nil {
		s.onClose()
	}
}

// Policy is the spend policy.
func (s *Spend) Policy() SpendPolicy { return s.policy }

// Limits are the limits now.
func (s *Spend) Limits() SpendLimits {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limits
}

// SetLimits replaces the limits (set_budget); a field of set that is nil
// keeps its limit.
func (s *Spend) SetLimits(tokens *int64, usd *float64, wall *time.Duration) SpendLimits {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tokens != nil {
		s.limits.Tokens = *tokens
	}
	if usd != nil {
		s.limits.USD = *usd
	}
	if wall != nil {
		s.limits.Wall = *wall
	}
	return s.limits
}

// Spent is what the limits count now: the runtime's own, or (scope tree)
// the tree's tokens and cost with the runtime's own wall time.
func (s *Spend) Spent() Spent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.countedLocked()
}

func (s *Spend) countedLocked() Spent {
	if s.ledger == nil {
		return s.own
	}
	if t, err := s.ledger.Total(); err == nil {
		s.tree = t
	}
	return Spent{Tokens: s.tree.Tokens, USD: s.tree.USD, Wall: s.own.Wall}
}

// Reached names the first limit the spending has reached ("tokens", "usd"
// or "wall"), "" when none.
func (s *Spend) Reached() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return reachedOf(s.limits, s.countedLocked())
}

func reachedOf(l SpendLimits, sp Spent) string {
	switch {
	case l.Tokens > 0 && sp.Tokens >= l.Tokens:
		return "tokens"
	case l.USD > 0 && sp.USD >= l.USD:
		return "usd"
	case l.Wall > 0 && sp.Wall >= l.Wall:
		return "wall"
	}
	return ""
}

// WallLeft is how much turn time the wall limit leaves, ok false when
// there is no wall limit.
func (s *Spend) WallLeft() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits.Wall <= 0 {
		return 0, false
	}
	return max(s.limits.Wall-s.own.Wall, 0), true
}

// charge adds a turn's spending: its tokens, its cost (what the runtime
// reported, else priced from the table) and its time.
func (s *Spend) charge(u *sdk.Usage, extra map[string]any, wall time.Duration) {
	d := Spent{Wall: wall}
	if u != nil {
		d.Tokens = u.TotalTokens
		if d.Tokens == 0 {
			d.Tokens = u.InputTokens + u.OutputTokens
		}
	}
	if c, ok := reportedCost(extra); ok {
		d.USD = c
	} else if s.price != nil && u != nil {
		d.USD = s.price.Cost(*u)
	}
	for _, up := range s.upstream {
		// Best effort: an upstream tree that cannot be written is its
		// owner's to notice; this runtime's own limits still hold.
		_, _ = up.Add(Spent{Tokens: d.Tokens, USD: d.USD})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.own = s.own.plus(d)
	if s.ledger != nil {
		// What is not in the ledger (a write failed) still counts here.
		if t, err := s.ledger.Add(Spent{Tokens: d.Tokens, USD: d.USD}); err == nil {
			s.tree = t
		} else {
			s.tree = s.tree.plus(Spent{Tokens: d.Tokens, USD: d.USD})
		}
	}
}

// reportedCost is the turn's cost as the runtime reported it
// (TurnResult.Extra["cost_usd"], sdk.CapCostReporting).
func reportedCost(extra map[string]any) (float64, bool) {
	switch v := extra["cost_usd"].(type) {
	case float64:
		return v, v >= 0
	case int64:
		return float64(v), v >= 0
	case int:
		return float64(v), v >= 0
	}
	return 0, false
}

// Errors of spend limits that cannot be enforced (refused before a session
// opens).
var (
	ErrSpendNoUsage = errors.New("the backend reports no token usage")
	ErrSpendNoPrice = errors.New("no price for the model")
)

// Check refuses, before a session opens, limits the backend cannot be held
// to: a token limit on a backend that reports no usage, a cost limit on a
// model neither the backend nor the price table prices.
func (s *Spend) Check(info sdk.BackendInfo, model string) error {
	l := s.Limits()
	usage := info.Capability(sdk.CapUsageReporting) == sdk.Supported
	if l.Tokens > 0 && !usage {
		return fmt.Errorf("--spend-tokens: %w: backend %s cannot be held to a token limit; use --spend-wall, or a backend that reports usage", ErrSpendNoUsage, info.Name)
	}
	if l.USD > 0 && info.Capability(sdk.CapCostReporting) != sdk.Supported {
		if s.price == nil || !usage {
			m := model
			if m == "" {
				m = "(the backend's default)"
			}
			return fmt.Errorf("--spend-usd: %w %s: backend %s reports no cost; add it to the price table (spend_prices = \"MODEL=INPUT:OUTPUT\", US dollars per million tokens) and name the model with --model", ErrSpendNoPrice, m, info.Name)
		}
	}
	return nil
}

// reachedEvent is the avenor.budget.reached event for limit.
func (s *Spend) reachedEvent(limit string) event.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.countedLocked()
	ev := event.Event{
		"event": string(event.TypeBudgetReached), "limit": limit, "policy": string(s.policy), "scope": string(s.scope),
		"spent_tokens": sp.Tokens, "spent_usd": sp.USD, "spent_wall_ms": sp.Wall.Milliseconds(),
	}
	addLimitFields(ev, s.limits)
	return ev
}

// addLimitFields adds the limits that are set to ev.
func addLimitFields(ev event.Event, l SpendLimits) {
	if l.Tokens > 0 {
		ev["spend_tokens"] = l.Tokens
	}
	if l.USD > 0 {
		ev["spend_usd"] = l.USD
	}
	if l.Wall > 0 {
		ev["spend_wall_ms"] = l.Wall.Milliseconds()
	}
}

// Status is the spend's entry in status and list: limits, spent, and the
// limit reached ("" none).
func (s *Spend) Status() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.countedLocked()
	m := map[string]any{"policy": string(s.policy), "scope": string(s.scope),
		"spent_tokens": sp.Tokens, "spent_usd": sp.USD, "spent_wall_ms": sp.Wall.Milliseconds(),
		"reached": reachedOf(s.limits, sp)}
	addLimitFields(m, s.limits)
	return m
}

// spendReached is the limit the run's spending has reached before a turn
// ("" none, or no limits, or the turn in flight of a re-attached session
// is adopted rather than prompted).
func (r *Runner) spendReached(adopted string) string {
	if r.opts.Spend == nil || adopted != "" {
		return ""
	}
	return r.opts.Spend.Reached()
}

// budgetReached ends the attempt before a turn: the limit is reached.
func (r *Runner) budgetReached(h *sessionHost, limit string) turnOutcome {
	h.emit(r.opts.Spend.reachedEvent(limit))
	return turnOutcome{stopReason: sdk.StopBudgetReached, final: true}
}

// chargeTurn adds the turn's spending and, when a limit is reached at the
// end of a turn that ended well (finish, or interrupt for tokens and cost),
// ends it budget_reached; a turn the wall limit interrupted already is.
func (r *Runner) chargeTurn(h *sessionHost, out *turnOutcome, took time.Duration) {
	sp := r.opts.Spend
	if sp == nil {
		return
	}
	sp.charge(out.usage, out.extra, took)
	limit := sp.Reached()
	if out.stopReason == sdk.StopBudgetReached {
		if limit == "" {
			limit = "wall"
		}
		h.emit(sp.reachedEvent(limit))
		return
	}
	if limit == "" || out.pluginGone || out.interrupted || out.restarted || sentinel.ExitCode(out.stopReason) != sentinel.ExitOK {
		return
	}
	h.emit(sp.reachedEvent(limit))
	out.stopReason, out.final = sdk.StopBudgetReached, true
}

// spendWallTimer fires when the wall limit passes during the turn, under
// --spend-policy interrupt; nil (never) otherwise.
func (r *Runner) spendWallTimer() (<-chan time.Time, func()) {
	sp := r.opts.Spend
	if sp == nil || sp.Policy() != SpendInterrupt {
		return nil, func() {}
	}
	left, ok := sp.WallLeft()
	if !ok {
		return nil, func() {}
	}
	t := time.NewTimer(left)
	return t.C, func() { t.Stop() }
}
