package fakellm

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestRecordsOpenAIChatConversation(t *testing.T) {
	s := Start(t, Config{})
	body := `{"model":"fake/fake-model","stream":true,"messages":[
	  {"role":"system","content":"You are opencode."},
	  {"role":"user","content":[{"type":"text","text":"Create out.txt"}]},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"echo hello > out.txt\"}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":"(no output)"}],
	  "tools":[` + bashTool + `]}`
	resp := post(t, s.OpenAIBaseURL()+"/chat/completions", body, map[string]string{"Authorization": "Bearer fake-key", "User-Agent": "opencode/1"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	r := reqs[0]
	if r.API != APIOpenAIChat || r.Model != "fake/fake-model" || !r.Stream || r.Side || r.Status != 200 {
		t.Errorf("recorded %+v", r)
	}
	if got := r.Header.Get("Authorization"); got != "REDACTED" {
		t.Errorf("Authorization recorded as %q, want REDACTED", got)
	}
	if got := r.Header.Get("User-Agent"); got != "opencode/1" {
		t.Errorf("User-Agent = %q", got)
	}
	want := []Message{
		{Role: "system", Text: "You are opencode."},
		{Role: "user", Text: "Create out.txt"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "bash", Args: map[string]any{"command": "echo hello > out.txt"}}}},
		{Role: "tool", ToolResults: []ToolResult{{ID: "call_1", Output: "(no output)"}}},
	}
	if !reflect.DeepEqual(r.Messages, want) {
		t.Errorf("messages:\n got %+v\nwant %+v", r.Messages, want)
	}
	if !r.AfterToolResult() || r.LastUserText() != "Create out.txt" || !r.Contains("echo hello") || r.System != "You are opencode." {
		t.Errorf("helpers: after=%v lastUser=%q contains=%v system=%q", r.AfterToolResult(), r.LastUserText(), r.Contains("echo hello"), r.System)
	}
	// After a tool result the default script answers the final text.
	text := readOpenAIStreamText(t, resp)
	if text != "DONE" {
		t.Errorf("streamed text %q, want DONE", text)
	}
}

// readOpenAIStreamText concatenates the content deltas of a chat stream.
func readOpenAIStreamText(t *testing.T, resp *http.Response) string {
	t.Helper()
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("bad chunk %q: %v", line, err)
		}
		for _, ch := range c.Choices {
			out.WriteString(ch.Delta.Content)
		}
	}
	return out.String()
}

func TestRecordsGeminiConversation(t *testing.T) {
	s := Start(t, Config{})
	body := `{"systemInstruction":{"role":"user","parts":[{"text":"You are gemini."}]},"contents":[
	  {"role":"user","parts":[{"text":"Create out.txt"}]},
	  {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"echo hello > out.txt"}}}]},
	  {"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ok"}}}]}],
	  "tools":[{"functionDeclarations":[` + shellDecl + `]}]}`
	resp := post(t, s.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=secret", body,
		map[string]string{"x-goog-api-key": "fake-key"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	r := s.Requests()[0]
	if r.API != APIGemini || r.Model != "gemini-2.5-flash" || !r.Stream || r.System != "You are gemini." {
		t.Errorf("recorded %+v", r)
	}
	if r.Header.Get("X-Goog-Api-Key") != "REDACTED" || r.Query.Get("key") != "REDACTED" || r.Query.Get("alt") != "sse" {
		t.Errorf("credentials not redacted: header %v query %v", r.Header, r.Query)
	}
	want := []Message{
		{Role: "user", Text: "Create out.txt"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "run_shell_command", Args: map[string]any{"command": "echo hello > out.txt"}}}},
		{Role: "tool", ToolResults: []ToolResult{{Name: "run_shell_command", Output: `{"output":"ok"}`}}},
	}
	if !reflect.DeepEqual(r.Messages, want) {
		t.Errorf("messages:\n got %+v\nwant %+v", r.Messages, want)
	}
	if tool, ok := r.ShellTool(); !ok || tool.Name != "run_shell_command" {
		t.Errorf("shell tool = %v %v", tool.Name, ok)
	}
}

func TestShellArgs(t *testing.T) {
	schema := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name   string
		schema string
		want   map[string]any
	}{
		{"opencode bash: description required", `{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"}},"required":["command","description"]}`,
			map[string]any{"command": "ls", "description": "Run ls"}},
		{"gemini upper-case types", `{"type":"OBJECT","properties":{"command":{"type":"STRING"},"dir_path":{"type":"STRING"}},"required":["command"]}`,
			map[string]any{"command": "ls"}},
		{"codex exec_command cmd", `{"type":"object","properties":{"cmd":{"type":"string"},"yield_time_ms":{"type":"number"}},"required":["cmd"]}`,
			map[string]any{"cmd": "ls"}},
		{"argv array", `{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}`,
			map[string]any{"command": []any{"bash", "-lc", "ls"}}},
		{"unknown name: first required string", `{"type":"object","properties":{"line":{"type":"string"},"login":{"type":"boolean"}},"required":["line","login"]}`,
			map[string]any{"line": "ls", "login": false}},
		{"no schema", `{}`, map[string]any{"command": "ls"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ShellArgs(Tool{Name: "bash", Schema: schema(tc.schema)}, "ls")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestShellWithoutShellToolIs400(t *testing.T) {
	s := Start(t, Config{Script: func(*Request) Reply { return Shell("ls") }})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"read","parameters":{}}}]}`
	resp := post(t, s.OpenAIBaseURL()+"/chat/completions", body, nil)
	if resp.StatusCode != 400 {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if r := s.Requests()[0]; r.Status != 400 {
		t.Errorf("recorded status %d", r.Status)
	}
}

func TestQueue(t *testing.T) {
	q := Queue(Text("one"), Shell("two"))
	r := &Request{}
	if got := q(r); got.Text != "one" {
		t.Errorf("first %+v", got)
	}
	if got := q(r); got.Shell != "two" {
		t.Errorf("second %+v", got)
	}
	if got := q(r); got.Status != 500 || !strings.Contains(got.ErrorMessage, "exhausted") {
		t.Errorf("third %+v", got)
	}
}

func TestSlowStreamStopsWhenClientLeaves(t *testing.T) {
	s := Start(t, Config{Script: func(*Request) Reply { return Slow(100, 200*time.Millisecond) }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[` + bashTool + `]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.OpenAIBaseURL()+"/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "tick 1 ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	start := time.Now()
	cancel()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if !s.Wait(wctx, func(rs []*Request) bool { return rs[0].Aborted }) {
		t.Fatal("the server did not notice the client leaving")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("noticed after %v", d)
	}
}

func TestUnknownPathRecordedAs404(t *testing.T) {
	s := Start(t, Config{})
	resp := post(t, s.URL+"/v1/nothing", `{}`, nil)
	if resp.StatusCode != 404 {
		t.Errorf("status %d", resp.StatusCode)
	}
	if r := s.Requests()[0]; r.API != APIUnknown || r.Status != 404 {
		t.Errorf("recorded %+v", r)
	}
	if len(s.MainRequests()) != 0 {
		t.Error("a 404 counted as a main request")
	}
}

func TestValueFromSchema(t *testing.T) {
	var s map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"a":{"type":["string","null"]},"n":{"type":"integer","minimum":3},
	  "e":{"enum":["x","y"]},"o":{"anyOf":[{"type":"boolean"}]},"l":{"type":"array"}}}`), &s)
	want := map[string]any{"a": "fake", "n": 3.0, "e": "x", "o": false, "l": []any{}}
	if got := ValueFromSchema(s); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestContainsSeesShellCharacters(t *testing.T) {
	r := &Request{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "bash", Args: map[string]any{"command": "echo a > b && c"}}}}}}
	if !r.Contains("echo a > b && c") {
		t.Error("Contains misses a command with > and &")
	}
}
