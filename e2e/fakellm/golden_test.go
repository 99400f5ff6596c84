package fakellm

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixedNow makes `created` fields reproducible.
func fixedNow() time.Time { return time.Unix(1764403200, 0) }

// goldenCase is one request whose whole answer (status, content type and
// body bytes) is pinned in testdata/<api>/<name>.golden.
type goldenCase struct {
	name   string
	method string
	path   string
	body   string
	reply  Reply
}

func runGolden(t *testing.T, api string, cases []goldenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(Config{Now: fixedNow, Script: func(*Request) Reply { return tc.reply }, Logf: t.Logf})
			ts := httptest.NewServer(s)
			defer ts.Close()
			hreq, err := http.NewRequest(tc.method, ts.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			hreq.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(hreq)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("%d %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			path := filepath.Join("testdata", api, tc.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal([]byte(got), want) {
				t.Errorf("answer differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// bashTool is opencode's bash tool as @ai-sdk/openai-compatible sends it.
const bashTool = `{"type":"function","function":{"name":"bash","description":"Runs a command",
 "parameters":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},
 "description":{"type":"string"}},"required":["command","description"]}}}`

func TestOpenAIChatGolden(t *testing.T) {
	user := `{"role":"user","content":"Create out.txt"}`
	runGolden(t, "openai_chat", []goldenCase{
		{name: "stream_text", method: "POST", path: "/v1/chat/completions",
			body:  `{"model":"fake-model","stream":true,"messages":[` + user + `],"tools":[` + bashTool + `]}`,
			reply: Reply{Chunks: []string{"DO", "NE"}}},
		{name: "stream_shell_call", method: "POST", path: "/v1/chat/completions",
			body:  `{"model":"fake-model","stream":true,"messages":[` + user + `],"tools":[` + bashTool + `]}`,
			reply: Shell("echo hello > out.txt")},
		{name: "single_text", method: "POST", path: "/v1/chat/completions",
			body:  `{"model":"fake-model","messages":[` + user + `],"tools":[` + bashTool + `]}`,
			reply: Text("DONE")},
		{name: "single_shell_call", method: "POST", path: "/v1/chat/completions",
			body:  `{"model":"fake-model","messages":[` + user + `],"tools":[` + bashTool + `]}`,
			reply: Shell("echo hello > out.txt")},
		{name: "side_title", method: "POST", path: "/v1/chat/completions",
			body: `{"model":"fake-small","stream":true,"messages":[{"role":"system","content":"Generate a title"},` + user + `]}`},
		{name: "error", method: "POST", path: "/v1/chat/completions",
			body:  `{"model":"fake-model","stream":true,"messages":[` + user + `],"tools":[` + bashTool + `]}`,
			reply: Fail(400, "scripted failure")},
		{name: "models", method: "GET", path: "/v1/models"},
	})
}

// shellDecl is gemini-cli's run_shell_command declaration.
const shellDecl = `{"name":"run_shell_command","description":"Runs a shell command",
 "parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},
 "dir_path":{"type":"string"},"is_background":{"type":"boolean"}},"required":["command"]}}`

func TestGeminiGolden(t *testing.T) {
	user := `{"role":"user","parts":[{"text":"Create out.txt"}]}`
	tools := `"tools":[{"functionDeclarations":[` + shellDecl + `]}]`
	runGolden(t, "gemini", []goldenCase{
		{name: "stream_text", method: "POST", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			body: `{"contents":[` + user + `],` + tools + `}`, reply: Reply{Chunks: []string{"DO", "NE"}}},
		{name: "stream_shell_call", method: "POST", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			body: `{"contents":[` + user + `],` + tools + `}`, reply: Shell("echo hello > out.txt")},
		{name: "single_text", method: "POST", path: "/v1beta/models/gemini-2.5-flash:generateContent",
			body: `{"contents":[` + user + `],` + tools + `}`, reply: Text("DONE")},
		{name: "side_structured", method: "POST", path: "/v1beta/models/gemini-2.5-flash:generateContent",
			body: `{"contents":[` + user + `],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":
			{"type":"object","properties":{"next_speaker":{"type":"string","enum":["user","model"]},"reasoning":{"type":"string"}},
			"required":["reasoning","next_speaker"]}}}`},
		{name: "error", method: "POST", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			body: `{"contents":[` + user + `],` + tools + `}`, reply: Fail(400, "scripted failure")},
		{name: "count_tokens", method: "POST", path: "/v1beta/models/gemini-2.5-flash:countTokens",
			body: `{"contents":[` + user + `]}`},
		{name: "models", method: "GET", path: "/v1beta/models"},
	})
}
