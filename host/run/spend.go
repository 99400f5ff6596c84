package run

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Spend limits' settings (docs/unattended.md#spend-limits): --spend-tokens,
// --spend-usd, --spend-wall, --spend-scope, --spend-policy and
// --spend-prices, the config keys of the same names, and a spawn's params.

// EnvSpendLedger names the spend ledgers of the tree-scoped runtimes a
// runtime runs under, a list joined by ':' (os.PathListSeparator): every
// turn the runtime (and avenor stable or avenor run started inside it)
// runs adds its tokens and cost to each.
const EnvSpendLedger = "AVENOR_SPEND_LEDGER"

// MaxSpendPrices bounds the entries of the price table (spend_prices).
const MaxSpendPrices = 256

// SpendSettings checks the spend settings and returns the runtime's spend
// plan, nil when the run set no limit and runs in no tree that counts
// spending. name turns a setting's key into what the user wrote (FlagName,
// a spawn param). The ledger of a tree scope is created (in a fresh 0700
// directory) only by SpendPlan.Open.
func SpendSettings(s config.Settings, name func(string) string, getenv func(string) string) (*SpendPlan, error) {
	limits := hostrt.SpendLimits{Tokens: int64(s.SpendTokens), USD: s.SpendUSD, Wall: s.SpendWall}
	if err := limits.Validate(name); err != nil {
		return nil, err
	}
	policy, err := hostrt.ParseSpendPolicy(s.SpendPolicy)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name("spend_policy"), err)
	}
	scope, err := hostrt.ParseSpendScope(s.SpendScope)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name("spend_scope"), err)
	}
	prices, err := ParsePrices(s.SpendPrices)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name("spend_prices"), err)
	}
	var upstream []string
	if getenv != nil {
		for _, p := range filepath.SplitList(getenv(EnvSpendLedger)) {
			if filepath.IsAbs(p) {
				upstream = append(upstream, p)
			}
		}
	}
	if !limits.Any() {
		if s.SpendScope != "" || s.SpendPolicy != "" {
			return nil, fmt.Errorf("%s and %s need a limit: set %s, %s or %s", name("spend_scope"), name("spend_policy"), name("spend_tokens"), name("spend_usd"), name("spend_wall"))
		}
		if len(upstream) == 0 {
			return nil, nil
		}
	}
	p := &SpendPlan{Limits: limits, Policy: policy, Scope: scope, Upstream: upstream}
	if price, ok := prices[s.Model]; ok {
		p.Price = &price
	}
	return p, nil
}

// SpendPlan is a runtime's checked spend settings, before its ledger
// exists.
type SpendPlan struct {
	Limits   hostrt.SpendLimits
	Policy   hostrt.SpendPolicy
	Scope    hostrt.SpendScope
	Price    *hostrt.Price
	Upstream []string // ledger files of the trees it runs in
}

// Open makes the runtime's Spend: for scope tree, its ledger file in a
// fresh 0700 directory, whose path goes into env (EnvSpendLedger, after the
// upstream ones) so that what the runtime starts counts too. cleanup
// removes that directory.
func (p *SpendPlan) Open(env map[string]string) (sp *hostrt.Spend, outEnv map[string]string, cleanup func(), err error) {
	cleanup = func() {}
	if p == nil {
		return nil, env, cleanup, nil
	}
	var up []hostrt.Ledger
	for _, path := range p.Upstream {
		up = append(up, FileLedger(path))
	}
	chain := append([]string(nil), p.Upstream...)
	var own hostrt.Ledger
	if p.Scope == hostrt.SpendScopeTree {
		dir, err := os.MkdirTemp("", "avenor-spend-")
		if err != nil {
			return nil, env, cleanup, fmt.Errorf("spend scope tree: creating its ledger: %w", err)
		}
		path := filepath.Join(dir, "ledger.json")
		own, chain = FileLedger(path), append(chain, path)
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	if len(chain) > 0 {
		out := make(map[string]string, len(env)+1)
		for k, v := range env {
			out[k] = v
		}
		out[EnvSpendLedger] = strings.Join(chain, string(os.PathListSeparator))
		env = out
	}
	return hostrt.NewSpend(p.Limits, p.Policy, p.Scope, p.Price, own, up), env, cleanup, nil
}

// ParsePrices parses a price table: MODEL=INPUT:OUTPUT entries joined by
// commas, prices in US dollars per million tokens. A model name may hold
// '=' or ':' (the last '=' of an entry ends the name).
func ParsePrices(s string) (map[string]hostrt.Price, error) {
	out := map[string]hostrt.Price{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	entries := strings.Split(s, ",")
	if len(entries) > MaxSpendPrices {
		return nil, fmt.Errorf("%d entries, at most %d", len(entries), MaxSpendPrices)
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		eq := strings.LastIndex(e, "=")
		if eq <= 0 {
			return nil, fmt.Errorf("entry %q: want MODEL=INPUT:OUTPUT (US dollars per million tokens)", e)
		}
		model, prices := strings.TrimSpace(e[:eq]), e[eq+1:]
		in, outp, ok := strings.Cut(prices, ":")
		if !ok {
			return nil, fmt.Errorf("entry %q: want MODEL=INPUT:OUTPUT (US dollars per million tokens)", e)
		}
		pin, err := priceOf(in)
		if err != nil {
			return nil, fmt.Errorf("entry %q: input price: %w", e, err)
		}
		pout, err := priceOf(outp)
		if err != nil {
			return nil, fmt.Errorf("entry %q: output price: %w", e, err)
		}
		if _, dup := out[model]; dup {
			return nil, fmt.Errorf("model %q is priced twice", model)
		}
		out[model] = hostrt.Price{InputPerMTok: pin, OutputPerMTok: pout}
	}
	return out, nil
}

func priceOf(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a non-negative number", s)
	}
	return f, nil
}

// openSpend gives o the spend of settings set (nil when it asks for none),
// counting into the ledgers o.Env (else the process) names
// (EnvSpendLedger): called once a
// runtime's options are applied (a spawn's, a recovered record's). A
// settings error was refused when the spawn resolved; here it leaves o
// without limits.
func openSpend(o *hostrt.Options, set config.Settings) {
	plan, err := SpendSettings(set, spawnParam, func(k string) string {
		if v := o.Env[k]; v != "" {
			return v
		}
		// A nested supervisor: the runtime that started it passed its
		// ledgers in the supervisor's own environment.
		return os.Getenv(k)
	})
	if err != nil || plan == nil {
		return
	}
	sp, env, cleanup, err := plan.Open(o.Env)
	if err != nil {
		o.Logger.Warn("spend limits: the tree's ledger could not be made; the runtime's own spending counts", "error", err)
		plan.Scope = hostrt.SpendScopeRuntime
		sp, env, cleanup, _ = plan.Open(o.Env)
	}
	sp.OnClose(cleanup)
	o.Spend, o.Env = sp, env
}

// CheckSpend refuses, before anything of the spawn runs, spend limits its
// backend cannot be held to (a token limit without usage reporting, a
// cost limit on a model with no price): the backend's plugin is started to
// describe itself and stopped again. Nothing is started when no limit was
// asked.
func (sp Spawned) CheckSpend(ctx context.Context) error {
	plan, err := SpendSettings(sp.Backend.Settings, spawnParam, nil)
	if err != nil {
		return control.InvalidParams(err.Error())
	}
	if plan == nil || !plan.Limits.Any() {
		return nil
	}
	if sp.Phased != nil {
		return fmt.Errorf("spend limits are not available for a loop or team run: set them on a single runtime")
	}
	info, err := describe(ctx, sp.Backend.Backend)
	if err != nil {
		return err
	}
	return hostrt.NewSpend(plan.Limits, plan.Policy, plan.Scope, plan.Price, nil, nil).Check(info, sp.Backend.Settings.Model)
}

// openOneshotSpend opens the spend of avenor run (nil plan: none); a tree
// ledger that cannot be made refuses the run before anything starts.
func openOneshotSpend(plan *SpendPlan, env map[string]string) (*hostrt.Spend, map[string]string, error) {
	if plan == nil {
		return nil, env, nil
	}
	sp, env, cleanup, err := plan.Open(env)
	if err != nil {
		return nil, env, err
	}
	sp.OnClose(cleanup)
	return sp, env, nil
}

// ContextWarnPct checks --context-warn-pct (context_warn_pct): 0 (none)
// or 1 to 100.
func ContextWarnPct(s config.Settings, name func(string) string) (int, error) {
	if n := s.ContextWarnPct; n < 0 || n > 100 {
		return 0, fmt.Errorf("%s %d is out of range: 1 to 100 (0: none)", name("context_warn_pct"), n)
	}
	return s.ContextWarnPct, nil
}

// AutoCompactPct checks --auto-compact-pct (auto_compact_pct): 0 (never)
// or 1 to 100, and refused for a loop or team run, whose phases are runs
// of their own that would not compact (fail closed).
func AutoCompactPct(s config.Settings, phased bool, name func(string) string) (int, error) {
	n := s.AutoCompactPct
	if n < 0 || n > 100 {
		return 0, fmt.Errorf("%s %d is out of range: 1 to 100 (0: never)", name("auto_compact_pct"), n)
	}
	if n > 0 && phased {
		return 0, fmt.Errorf("%s is not available for a loop or team run (its phases are runs of their own); drop it, or run the prompt on its own", name("auto_compact_pct"))
	}
	return n, nil
}

// CheckCompaction refuses --auto-compact-pct on a backend that does not
// declare the compaction capability: it could not compact (fail closed).
func CheckCompaction(info sdk.BackendInfo, pct int, name func(string) string) error {
	if pct <= 0 || info.Capability(sdk.CapCompaction) != sdk.Unsupported {
		return nil
	}
	return fmt.Errorf("backend %s cannot compact its context (capability %s); drop %s, or use a backend that declares it (avenor backends --json)",
		info.Name, sdk.CapCompaction, name("auto_compact_pct"))
}

// SpendFlags defines avenor run's spend and context flags, whose values
// reach the settings by their config keys (spend_tokens, ...).
func SpendFlags(fl FlagSet) {
	fl.Int("spend-tokens", 0, "pause at this many input plus output tokens: the turn ends budget_reached, exit 5, BLOCKED; --resume continues (0: none)")
	fl.String("spend-usd", "", "pause at this cost in US dollars, as the runtime reports it or spend_prices prices it (default: none)")
	fl.Duration("spend-wall", 0, "pause after this much time in turns, e.g. 20m (0: none)")
	fl.String("spend-scope", "", "what the spend limits count: runtime, or tree (with every runtime started under it) (default runtime)")
	fl.String("spend-policy", "", "at a spend limit: finish (the turn ends on its own, then the run) or interrupt (the turn is cancelled) (default finish)")
	fl.String("spend-prices", "", "price table for --spend-usd: MODEL=INPUT:OUTPUT[,...], US dollars per million tokens")
	fl.Int("context-warn-pct", 0, "report context use (avenor.context after each turn) and warn once the window is this full, 1-100 (0: none)")
	fl.Int("auto-compact-pct", 0, "ask the runtime to compact its context at the turn boundary once the window is this full, 1-100, on backends with the compaction capability; implies avenor.context (0: never)")
}
