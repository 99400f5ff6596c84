package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Reply is what the fake model answers to one request.
type Reply struct {
	// Text is the assistant text, streamed as one chunk unless Chunks is set.
	Text string
	// Chunks, when set, is the text streamed piece by piece (Text is then
	// ignored); a non-streaming answer joins them.
	Chunks []string
	// ChunkDelay is the pause before every chunk but the first: a slow
	// stream, for cancel tests. The pause ends early when the client goes away.
	ChunkDelay time.Duration
	// Delay is the pause before the answer starts.
	Delay time.Duration

	// Shell, when set, is a command for the request's shell tool
	// (Request.ShellTool): one tool call whose arguments are shaped from the
	// tool's schema. A request that offers no shell tool is answered 400.
	Shell string
	// ToolCalls are explicit tool calls, after the Shell one.
	ToolCalls []ToolCall

	// Status, when >= 400, makes the answer an HTTP error in the API's
	// error shape, with ErrorMessage.
	Status       int
	ErrorMessage string
	// Headers are set on the answer (a provider's rate-limit headers on a
	// 429: retry-after, anthropic-ratelimit-*, x-ratelimit-*).
	Headers map[string]string
	// InputTokens, when > 0, is the input the Anthropic answer's usage
	// reports instead of 10: a context that fills a window, for context
	// use and compaction tests.
	InputTokens int
}

// Script decides the reply to one request. It may be called concurrently.
type Script func(*Request) Reply

// Text is a reply of text only.
func Text(s string) Reply { return Reply{Text: s} }

// inputTokens is the input tokens an answer reports: InputTokens, else 10.
func (r Reply) inputTokens() int {
	if r.InputTokens > 0 {
		return r.InputTokens
	}
	return 10
}

// Shell is a reply of one call of the shell tool running cmd.
func Shell(cmd string) Reply { return Reply{Shell: cmd} }

// Slow is a text reply streamed as n chunks ("tick 1 ", "tick 2 ", …)
// every d: a stream a test can cancel in the middle.
func Slow(n int, d time.Duration) Reply {
	r := Reply{ChunkDelay: d}
	for i := 1; i <= n; i++ {
		r.Chunks = append(r.Chunks, fmt.Sprintf("tick %d ", i))
	}
	return r
}

// Fail is an HTTP error reply.
func Fail(status int, msg string) Reply { return Reply{Status: status, ErrorMessage: msg} }

// text is the whole text of the reply.
func (r Reply) text() string {
	if len(r.Chunks) > 0 {
		return strings.Join(r.Chunks, "")
	}
	return r.Text
}

// chunks is the text as streamed pieces; none for an empty text.
func (r Reply) chunks() []string {
	if len(r.Chunks) > 0 {
		return r.Chunks
	}
	if r.Text == "" {
		return nil
	}
	return []string{r.Text}
}

// ShellThenText is the stateless script of real-runtimes.md: after a tool
// result it answers final; otherwise it calls the shell tool with cmd.
func ShellThenText(cmd, final string) Script {
	return func(r *Request) Reply {
		if r.AfterToolResult() {
			return Text(final)
		}
		return Shell(cmd)
	}
}

// Queue answers requests with replies in order; once they are used up every
// request gets a 500 naming the queue as exhausted, so an unexpected extra
// model call fails loudly.
func Queue(replies ...Reply) Script {
	var mu sync.Mutex
	next := 0
	return func(*Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			return Fail(500, fmt.Sprintf("fakellm: script queue exhausted after %d replies", len(replies)))
		}
		next++
		return replies[next-1]
	}
}

// SideText is the text the default side script answers.
const SideText = "Fake title"

// DefaultSide answers side requests (those offering no tools): JSON shaped
// from the response schema when one is asked for, else SideText.
func DefaultSide(r *Request) Reply {
	if r.ResponseSchema != nil {
		return Text(jsonString(ValueFromSchema(r.ResponseSchema)))
	}
	return Text(SideText)
}

// ShellArgs shapes the arguments of a shell tool call from the tool's
// schema: the command goes to the property that holds commands (command,
// cmd, …, else the first required string); every other required property
// gets a plain value of its type.
func ShellArgs(t Tool, cmd string) map[string]any {
	props, _ := t.Schema["properties"].(map[string]any)
	required := stringSet(t.Schema["required"])
	args := map[string]any{}
	key := ""
	for _, k := range []string{"command", "cmd", "commandLine", "command_line", "script", "input"} {
		if _, ok := props[k]; ok {
			key = k
			break
		}
	}
	if key == "" {
		for _, k := range sortedKeys(props) {
			if required[k] && schemaType(props[k]) == "string" {
				key = k
				break
			}
		}
	}
	if key == "" {
		key = "command"
	}
	if p, _ := props[key].(map[string]any); schemaType(p) == "array" {
		args[key] = []any{"bash", "-lc", cmd}
	} else {
		args[key] = cmd
	}
	for k := range required {
		if _, done := args[k]; done {
			continue
		}
		p, _ := props[k].(map[string]any)
		if strings.Contains(strings.ToLower(k), "description") || k == "justification" {
			args[k] = "Run " + cmd
			continue
		}
		args[k] = ValueFromSchema(p)
	}
	return args
}

// ValueFromSchema builds a plain value that satisfies a JSON schema: every
// property of an object, the first enum value, "fake" for strings, zero
// numbers, false, empty arrays.
func ValueFromSchema(s map[string]any) any {
	if s == nil {
		return map[string]any{}
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if a, ok := alts[0].(map[string]any); ok {
				return ValueFromSchema(a)
			}
		}
	}
	switch schemaType(s) {
	case "string":
		return "fake"
	case "integer", "number":
		if min, ok := s["minimum"].(float64); ok {
			return min
		}
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	props, _ := s["properties"].(map[string]any)
	out := map[string]any{}
	for k, p := range props {
		ps, _ := p.(map[string]any)
		out[k] = ValueFromSchema(ps)
	}
	return out
}

// schemaType is the lower-case type of a schema; the first non-null one
// when it is a list; "object" when properties are given and no type.
func schemaType(v any) string {
	s, _ := v.(map[string]any)
	switch t := s["type"].(type) {
	case string:
		return strings.ToLower(t)
	case []any:
		for _, x := range t {
			if xs, _ := x.(string); xs != "" && !strings.EqualFold(xs, "null") {
				return strings.ToLower(xs)
			}
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

func stringSet(v any) map[string]bool {
	out := map[string]bool{}
	list, _ := v.([]any)
	for _, x := range list {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonString is compact JSON without HTML escaping; "" for values that do
// not marshal.
func jsonString(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}
