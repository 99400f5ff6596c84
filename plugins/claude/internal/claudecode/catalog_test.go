package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func claudeTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseInitializeModels(t *testing.T) {
	cases := []struct {
		name   string
		raw    string
		ids    string
		listed bool
	}{
		{"claude 2.1.332", string(claudeTestdata(t, "initialize-response-2.1.332.json")), "default,opus,fable,sonnet,haiku", true},
		{"no models key (an older Claude Code)", `{"commands":[]}`, "", false},
		{"an empty list", `{"models":[]}`, "", true},
		{"an entry without a value skipped", `{"models":[{"displayName":"x"},{"value":"opus"}]}`, "opus", true},
		{"not JSON", `<html>`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			models, listed := ParseInitializeModels(json.RawMessage(tc.raw))
			var ids []string
			for _, m := range models {
				ids = append(ids, m.ID)
			}
			if strings.Join(ids, ",") != tc.ids || listed != tc.listed {
				t.Errorf("ParseInitializeModels = %v, %v", ids, listed)
			}
		})
	}
}

func TestParseAuthStatus(t *testing.T) {
	for name, want := range map[string]runtime.AuthState{
		"auth-status-none-2.1.332.json":   runtime.AuthRequired,
		"auth-status-apikey-2.1.332.json": runtime.AuthAuthenticated,
	} {
		if got, msg := ParseAuthStatus(claudeTestdata(t, name)); got != want || msg == "" {
			t.Errorf("%s: %q, %q; want %q", name, got, msg, want)
		}
	}
	for _, raw := range []string{"", "{}", `{"loggedIn":"yes"}`, "Error: unknown command"} {
		if got, _ := ParseAuthStatus([]byte(raw)); got != runtime.AuthUnknown {
			t.Errorf("%q: %q, want unknown", raw, got)
		}
	}
}

// FuzzClaudeCatalog: whatever Claude Code answers, no panic, ids are
// non-empty, auth stays in the vocabulary.
func FuzzClaudeCatalog(f *testing.F) {
	f.Add(claudeTestdata(f, "initialize-response-2.1.332.json"))
	f.Add(claudeTestdata(f, "auth-status-apikey-2.1.332.json"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		models, _ := ParseInitializeModels(raw)
		for _, m := range models {
			if m.ID == "" {
				t.Errorf("empty id from %q", raw)
			}
		}
		switch st, _ := ParseAuthStatus(raw); st {
		case runtime.AuthAuthenticated, runtime.AuthRequired, runtime.AuthUnknown:
		default:
			t.Errorf("state %q", st)
		}
	})
}
