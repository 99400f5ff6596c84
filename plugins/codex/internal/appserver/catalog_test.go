package appserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func modelListTestdata(t testing.TB) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "model-list-0.171.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var frame struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &frame); err != nil {
		t.Fatal(err)
	}
	return frame.Result
}

func TestParseModelList(t *testing.T) {
	cases := []struct {
		name        string
		raw         string
		n           int
		first, next string
		wantErr     bool
	}{
		{name: "codex 0.171.0", raw: string(modelListTestdata(t)), n: 11, first: "gpt-6.2-sol"},
		{name: "hidden skipped, model when no id, a next page",
			raw: `{"data":[{"id":"a","hidden":true},{"model":"b","displayName":"B"}],"nextCursor":"c2"}`, n: 1, first: "b", next: "c2"},
		{name: "empty", raw: `{"data":[]}`},
		{name: "not an object", raw: `[1]`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			models, next, err := ParseModelList(json.RawMessage(tc.raw))
			if (err != nil) != tc.wantErr || len(models) != tc.n || next != tc.next || (tc.n > 0 && models[0].ID != tc.first) {
				t.Errorf("ParseModelList = %+v, %q, %v", models, next, err)
			}
		})
	}
	models, _, _ := ParseModelList(modelListTestdata(t))
	if models[0].Name != "GPT-6.2-Sol" {
		t.Errorf("display name %q", models[0].Name)
	}
}

func TestParseAccount(t *testing.T) {
	for raw, want := range map[string]runtime.AuthState{
		// codex 0.171.0 with a custom provider and no login:
		`{"account":null,"userId":null,"requiresOpenaiAuth":false,"workspaceRouting":null}`: runtime.AuthUnknown,
		`{"account":null,"requiresOpenaiAuth":true}`:                                        runtime.AuthRequired,
		`{"account":{"type":"apiKey"},"requiresOpenaiAuth":true}`:                           runtime.AuthAuthenticated,
		`{"account":{"type":"chatgpt","email":"a@b"}}`:                                      runtime.AuthAuthenticated,
		`{}`:   runtime.AuthUnknown,
		`"no"`: runtime.AuthUnknown,
	} {
		if got, msg := ParseAccount(json.RawMessage(raw)); got != want || msg == "" {
			t.Errorf("ParseAccount(%s) = %q, %q; want %q", raw, got, msg, want)
		}
	}
}

// FuzzCatalogAnswers: whatever Codex answers, the parsers do not panic, a
// listed model has an id, and auth stays in the vocabulary.
func FuzzCatalogAnswers(f *testing.F) {
	f.Add(string(modelListTestdata(f)))
	f.Add(`{"account":{"type":"apiKey"},"requiresOpenaiAuth":true}`)
	f.Add(`{"data":[{"model":"b"}],"nextCursor":"x"}`)
	f.Fuzz(func(t *testing.T, raw string) {
		models, _, _ := ParseModelList(json.RawMessage(raw))
		for _, m := range models {
			if strings.TrimSpace(m.ID) == "" && m.ID == "" {
				t.Errorf("a model without an id from %q", raw)
			}
		}
		switch st, _ := ParseAccount(json.RawMessage(raw)); st {
		case runtime.AuthAuthenticated, runtime.AuthRequired, runtime.AuthUnknown:
		default:
			t.Errorf("state %q", st)
		}
	})
}
