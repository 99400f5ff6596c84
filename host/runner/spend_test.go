package runner

import (
	"errors"
	"testing"
	"time"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestSpendReached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits SpendLimits
		spent  Spent
		want   string
	}{
		{"none", SpendLimits{}, Spent{Tokens: 1 << 40, USD: 1e9, Wall: time.Hour}, ""},
		{"under", SpendLimits{Tokens: 100, USD: 1, Wall: time.Minute}, Spent{Tokens: 99, USD: 0.99, Wall: time.Second}, ""},
		{"tokens at", SpendLimits{Tokens: 100}, Spent{Tokens: 100}, "tokens"},
		{"usd over", SpendLimits{USD: 1}, Spent{USD: 1.5}, "usd"},
		{"wall", SpendLimits{Wall: time.Second}, Spent{Wall: 2 * time.Second}, "wall"},
	} {
		if got := reachedOf(tc.limits, tc.spent); got != tc.want {
			t.Errorf("%s: reached %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSpendCharge(t *testing.T) {
	price := &Price{InputPerMTok: 1e6, OutputPerMTok: 2e6} // $1 an input token, $2 an output token
	sp := NewSpend(SpendLimits{USD: 10}, "", "", price, nil, nil)
	sp.charge(&sdk.Usage{InputTokens: 2, OutputTokens: 1}, nil, time.Second) // priced: $4
	if s := sp.Spent(); s.Tokens != 3 || s.USD != 4 || s.Wall != time.Second {
		t.Fatalf("after a priced turn: %+v", s)
	}
	sp.charge(&sdk.Usage{InputTokens: 2, OutputTokens: 1, TotalTokens: 5}, map[string]any{"cost_usd": 7.0}, 0) // reported: $7
	if s := sp.Spent(); s.Tokens != 8 || s.USD != 11 {
		t.Fatalf("after a reported cost: %+v", s)
	}
	if got := sp.Reached(); got != "usd" {
		t.Errorf("reached %q, want usd", got)
	}
	usd := 20.0
	sp.SetLimits(nil, &usd, nil)
	if got := sp.Reached(); got != "" {
		t.Errorf("after raising the limit: reached %q", got)
	}
}

func TestSpendCheck(t *testing.T) {
	reports := sdk.BackendInfo{Name: "b", Capabilities: sdk.Supports(sdk.CapUsageReporting, sdk.CapCostReporting)}
	tokensOnly := sdk.BackendInfo{Name: "b", Capabilities: sdk.Supports(sdk.CapUsageReporting)}
	nothing := sdk.BackendInfo{Name: "b"}
	for _, tc := range []struct {
		name   string
		limits SpendLimits
		price  *Price
		info   sdk.BackendInfo
		want   error
	}{
		{"tokens on a backend that reports usage", SpendLimits{Tokens: 1}, nil, tokensOnly, nil},
		{"tokens without usage", SpendLimits{Tokens: 1}, nil, nothing, ErrSpendNoUsage},
		{"usd on a backend that reports cost", SpendLimits{USD: 1}, nil, reports, nil},
		{"usd priced", SpendLimits{USD: 1}, &Price{}, tokensOnly, nil},
		{"usd without a price", SpendLimits{USD: 1}, nil, tokensOnly, ErrSpendNoPrice},
		{"usd priced, no usage to price", SpendLimits{USD: 1}, &Price{}, nothing, ErrSpendNoPrice},
		{"wall anywhere", SpendLimits{Wall: time.Second}, nil, nothing, nil},
	} {
		err := NewSpend(tc.limits, "", "", tc.price, nil, nil).Check(tc.info, "m")
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
