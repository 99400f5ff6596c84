package runtime

import (
	"fmt"
	"strings"
	"testing"
)

func TestCatalogBounded(t *testing.T) {
	many := make([]Model, MaxModels+3)
	for i := range many {
		many[i] = Model{ID: fmt.Sprintf("m%d", i)}
	}
	cases := []struct {
		name          string
		in            Catalog
		wantIDs       int
		wantTruncated bool
		check         func(t *testing.T, c Catalog)
	}{
		{name: "at the cap", in: Catalog{ModelsSupported: true, Models: many[:MaxModels]}, wantIDs: MaxModels},
		{name: "over the cap", in: Catalog{ModelsSupported: true, Models: many}, wantIDs: MaxModels, wantTruncated: true},
		{name: "id at its bound kept", in: Catalog{ModelsSupported: true, Models: []Model{{ID: strings.Repeat("a", MaxModelIDBytes)}}}, wantIDs: 1},
		{name: "id over its bound dropped", in: Catalog{ModelsSupported: true, Models: []Model{{ID: strings.Repeat("a", MaxModelIDBytes+1)}}}, wantTruncated: true},
		{name: "empty and duplicate ids dropped", in: Catalog{ModelsSupported: true, Models: []Model{{ID: " "}, {ID: "a"}, {ID: " a "}}}, wantIDs: 1},
		{name: "control characters refused", in: Catalog{ModelsSupported: true, Models: []Model{{ID: "a\x1b[2J"}, {ID: "b", Name: "x\ny"}}}, wantIDs: 1, wantTruncated: true,
			check: func(t *testing.T, c Catalog) {
				if c.Models[0].Name != "" {
					t.Errorf("a name with a newline kept: %q", c.Models[0].Name)
				}
			}},
		{name: "unsupported clears the list", in: Catalog{Models: many[:2], ModelsError: "x"},
			check: func(t *testing.T, c Catalog) {
				if c.ModelsError != "" {
					t.Errorf("error kept on an unsupported catalog: %q", c.ModelsError)
				}
			}},
		{name: "error cut to one bounded line", in: Catalog{ModelsSupported: true, ModelsError: strings.Repeat("é", MaxCatalogMessage) + "\nsecond"},
			check: func(t *testing.T, c Catalog) {
				if strings.Contains(c.ModelsError, "\n") || len(c.ModelsError) > MaxCatalogMessage+len("…") {
					t.Errorf("error not one bounded line: %d bytes", len(c.ModelsError))
				}
			}},
		{name: "auth outside the vocabulary is unknown", in: Catalog{Auth: "ok"},
			check: func(t *testing.T, c Catalog) {
				if c.Auth != AuthUnknown {
					t.Errorf("auth %q", c.Auth)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.Bounded()
			if len(got.Models) != tc.wantIDs || got.ModelsTruncated != tc.wantTruncated {
				t.Errorf("%d models, truncated %v; want %d, %v", len(got.Models), got.ModelsTruncated, tc.wantIDs, tc.wantTruncated)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func TestAuthFromReadiness(t *testing.T) {
	for in, want := range map[string]AuthState{
		"ok": AuthAuthenticated, "missing": AuthRequired, "unknown": AuthUnknown, "": AuthUnknown,
		"authenticated": AuthAuthenticated, "rejected": AuthRejected, "weird": AuthUnknown,
	} {
		if got := AuthFromReadiness(in); got != want {
			t.Errorf("AuthFromReadiness(%q) = %q, want %q", in, got, want)
		}
	}
}
