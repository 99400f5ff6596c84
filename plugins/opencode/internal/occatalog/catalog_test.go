package occatalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseModels(t *testing.T) {
	cases := []struct {
		name  string
		out   string
		first string
		last  string
		n     int
	}{
		{"opencode 1.18.33 with a fake provider", readTestdata(t, "models-1.18.33.txt"), "opencode/big-pickle", "fake/fake-model", 9},
		{"log lines and colour skipped", "\x1b[0mINFO starting\nfake/fake-model\r\n\x1b[32mopenai/gpt-5\x1b[0m\nnot a model\n", "fake/fake-model", "openai/gpt-5", 2},
		{"ids with dots, colons and nested slashes", "openrouter/meta-llama/llama-3.1:free\nlmstudio/qwen2.5.1\n", "openrouter/meta-llama/llama-3.1:free", "lmstudio/qwen2.5.1", 2},
		{"empty", "", "", "", 0},
		{"a line with spaces is not an id", "fake/fake model\n", "", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseModels(tc.out)
			if len(got) != tc.n || (tc.n > 0 && (got[0].ID != tc.first || got[len(got)-1].ID != tc.last)) {
				t.Errorf("ParseModels = %+v", got)
			}
		})
	}
}

func TestParseAuthList(t *testing.T) {
	cases := []struct {
		name string
		out  string
		want runtime.AuthState
		ok   bool
	}{
		{"a stored credential and an environment key", readTestdata(t, "auth-list-1.18.33.txt"), runtime.AuthAuthenticated, true},
		{"none counted", readTestdata(t, "auth-list-none-1.18.33.txt"), runtime.AuthUnknown, true},
		{"one environment variable only", "┌  Environment\n│\n└  1 environment variable\n", runtime.AuthAuthenticated, true},
		{"unreadable", "Error: something\n", runtime.AuthUnknown, false},
		{"a huge count is not read", "└  99999999999999999999 credentials\n", runtime.AuthUnknown, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, msg, ok := ParseAuthList(tc.out)
			if got != tc.want || ok != tc.ok || (ok && msg == "") {
				t.Errorf("ParseAuthList = %q, %q, %v; want %q, %v", got, msg, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParsers: whatever OpenCode prints, the parsers neither panic nor
// return an id with spaces or control characters, nor a state outside the
// vocabulary.
func FuzzParsers(f *testing.F) {
	f.Add(readTestdata(f, "models-1.18.33.txt"))
	f.Add(readTestdata(f, "auth-list-1.18.33.txt"))
	f.Add("a/b\n\x1b[0m└  3 credentials\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, m := range ParseModels(out) {
			if m.ID == "" || strings.ContainsAny(m.ID, " \t\r\n\x1b") || !strings.Contains(m.ID, "/") || !utf8.ValidString(m.ID) && utf8.ValidString(out) {
				t.Errorf("id %q from %q", m.ID, out)
			}
		}
		st, _, _ := ParseAuthList(out)
		if st != runtime.AuthAuthenticated && st != runtime.AuthUnknown {
			t.Errorf("state %q", st)
		}
	})
}
