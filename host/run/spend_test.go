package run

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/avenor-go/avenor/host/config"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

func TestParsePrices(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]hostrt.Price
		err      string
	}{
		{name: "empty", in: "", want: map[string]hostrt.Price{}},
		{name: "two", in: "m1=3:15, m2=0.25:1.25", want: map[string]hostrt.Price{"m1": {InputPerMTok: 3, OutputPerMTok: 15}, "m2": {InputPerMTok: 0.25, OutputPerMTok: 1.25}}},
		{name: "a colon in the name", in: "llama3:8b=0:0", want: map[string]hostrt.Price{"llama3:8b": {}}},
		{name: "no prices", in: "m1", err: "want MODEL=INPUT:OUTPUT"},
		{name: "one price", in: "m1=3", err: "want MODEL=INPUT:OUTPUT"},
		{name: "not a number", in: "m1=abc:1", err: "input price"},
		{name: "negative", in: "m1=1:-1", err: "output price"},
		{name: "infinite", in: "m1=Inf:1", err: "input price"},
		{name: "twice", in: "m1=1:1,m1=2:2", err: "priced twice"},
		{name: "no name", in: "=1:1", err: "want MODEL=INPUT:OUTPUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePrices(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParsePrices(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("ParsePrices(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func FuzzParsePrices(f *testing.F) {
	for _, s := range []string{"", "m=1:2", "a:b=1:2,c=0:0", "=", "m=1:2:3", strings.Repeat("m=1:1,", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParsePrices(s)
		if err != nil {
			return
		}
		if len(got) > MaxSpendPrices {
			t.Fatalf("%d entries, more than %d", len(got), MaxSpendPrices)
		}
		for m, p := range got {
			if p.InputPerMTok < 0 || p.OutputPerMTok < 0 {
				t.Fatalf("%s: negative price %v", m, p)
			}
		}
	})
}

func TestSpendSettings(t *testing.T) {
	none := func(string) string { return "" }
	if p, err := SpendSettings(config.Settings{}, FlagName, none); p != nil || err != nil {
		t.Fatalf("no settings: %v, %v; want nothing", p, err)
	}
	p, err := SpendSettings(config.Settings{}, FlagName, func(string) string { return "/tmp/a:relative:/tmp/b" })
	if err != nil || p == nil || p.Limits.Any() || len(p.Upstream) != 2 {
		t.Fatalf("inherited ledgers only: %+v, %v; want a plan without limits counting into /tmp/a and /tmp/b", p, err)
	}
	p, err = SpendSettings(config.Settings{SpendTokens: 10, Model: "m1", SpendPrices: "m1=1:2"}, FlagName, none)
	if err != nil || p.Price == nil || p.Price.OutputPerMTok != 2 || p.Policy != hostrt.SpendFinish || p.Scope != hostrt.SpendScopeRuntime {
		t.Fatalf("tokens with a priced model: %+v, %v", p, err)
	}
	for _, tc := range []struct {
		s    config.Settings
		want string
	}{
		{config.Settings{SpendTokens: -1}, "--spend-tokens must not be negative"},
		{config.Settings{SpendUSD: -1}, "--spend-usd must be a non-negative number"},
		{config.Settings{SpendWall: -1}, "--spend-wall must not be negative"},
		{config.Settings{SpendTokens: 1, SpendPolicy: "later"}, `--spend-policy: spend policy "later"`},
		{config.Settings{SpendTokens: 1, SpendScope: "world"}, `--spend-scope: spend scope "world"`},
		{config.Settings{SpendScope: "tree"}, "need a limit"},
		{config.Settings{SpendUSD: 1, SpendPrices: "x"}, "--spend-prices"},
	} {
		if _, err := SpendSettings(tc.s, FlagName, none); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
}

// TestFileLedgerConcurrentAdds: adds from many goroutines (the runtimes
// of a tree) all count.
func TestFileLedgerConcurrentAdds(t *testing.T) {
	l := FileLedger(filepath.Join(t.TempDir(), "ledger.json"))
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if _, err := l.Add(hostrt.Spent{Tokens: 3, USD: 0.5}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, err := l.Total()
	if err != nil || got.Tokens != 600 || got.USD != 100 {
		t.Fatalf("total %+v, %v; want 600 tokens, $100", got, err)
	}
}

// TestSpendPlanOpenTree: a tree scope makes its ledger in a fresh private
// directory, names it after the upstream ones in the runtime's
// environment, and Close removes it.
func TestSpendPlanOpenTree(t *testing.T) {
	p := &SpendPlan{Limits: hostrt.SpendLimits{Tokens: 10}, Scope: hostrt.SpendScopeTree, Upstream: []string{"/up/ledger.json"}}
	sp, env, cleanup, err := p.Open(map[string]string{"K": "v"})
	if err != nil {
		t.Fatal(err)
	}
	sp.OnClose(cleanup)
	chain := filepath.SplitList(env[EnvSpendLedger])
	if env["K"] != "v" || len(chain) != 2 || chain[0] != "/up/ledger.json" {
		t.Fatalf("env %v: want K kept and the chain upstream first", env)
	}
	dir := filepath.Dir(chain[1])
	sp.Close()
	if _, err := filepath.Glob(dir); err != nil {
		t.Fatal(err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*")); len(matches) != 0 {
		t.Errorf("Close left %v", matches)
	}
}
