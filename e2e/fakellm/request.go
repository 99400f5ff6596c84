package fakellm

import (
	"net/http"
	"net/url"
	"strings"
)

// API names a wire format the server speaks.
type API string

// The wire formats. APIUnknown marks a request no dialect served (answered 404).
const (
	APIOpenAIChat API = "openai-chat"
	APIGemini     API = "gemini"
	APIUnknown    API = "unknown"
)

// Request is one recorded HTTP request, parsed into an API-neutral shape.
type Request struct {
	Seq    int    // 1-based order of arrival
	API    API    // the dialect that served it
	Method string // HTTP method
	Path   string // URL path
	// Query is the URL query with credential parameters (key) redacted.
	Query url.Values
	// Header is the request header with credential values replaced by "REDACTED".
	Header http.Header
	// Body is the JSON body, parsed; nil when the body was empty or not JSON.
	Body map[string]any

	Model    string // the model id the runtime asked for
	Stream   bool   // whether the reply is streamed
	System   string // system prompt (instructions), concatenated
	Messages []Message
	Tools    []Tool
	// ResponseSchema is the JSON schema of a structured-output request
	// (Gemini responseJsonSchema/responseSchema, OpenAI response_format).
	ResponseSchema map[string]any

	Side    bool // answered by Config.Side: the request offered no tools
	Status  int  // HTTP status of the answer
	Aborted bool // the client went away before the answer was complete
}

// Message is one conversation entry the runtime sent. Roles are normalised
// to "system", "user", "assistant" and "tool" (a message carrying tool
// results and no text).
type Message struct {
	Role        string
	Text        string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// Tool is one tool the runtime offered the model.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the arguments (Gemini's OpenAPI-style
	// schemas keep their upper-case types; helpers compare case-insensitively).
	Schema map[string]any
}

// ToolCall is a call of a tool, by the model.
type ToolCall struct {
	ID   string
	Name string
	Args map[string]any
}

// ToolResult is what the runtime sent back for a tool call.
type ToolResult struct {
	ID     string // call id (OpenAI), empty for Gemini
	Name   string // tool name (Gemini), empty for OpenAI
	Output string // the result as text (JSON when it was structured)
}

// LastMessage is the last message, or a zero Message when there is none.
func (r *Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// AfterToolResult says whether the last message carries tool results: the
// model is being asked to go on after a tool ran (or was refused).
func (r *Request) AfterToolResult() bool { return len(r.LastMessage().ToolResults) > 0 }

// LastUserText is the text of the last user message.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" && r.Messages[i].Text != "" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// Contains says whether any message (text, tool call arguments or tool
// result) contains s.
func (r *Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text, s) {
			return true
		}
		for _, c := range m.ToolCalls {
			if strings.Contains(c.Name, s) || strings.Contains(jsonString(c.Args), s) {
				return true
			}
		}
		for _, res := range m.ToolResults {
			if strings.Contains(res.Output, s) {
				return true
			}
		}
	}
	return false
}

// Tool returns the offered tool named name.
func (r *Request) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ShellToolNames are the names runtimes give their shell tool, in the order
// ShellTool prefers them.
var ShellToolNames = []string{"bash", "Bash", "shell", "run_shell_command", "shell_command", "exec_command",
	"execute_command", "run_command", "terminal"}

// ShellTool returns the runtime's shell tool, picked by name (ShellToolNames).
func (r *Request) ShellTool() (Tool, bool) {
	for _, name := range ShellToolNames {
		if t, ok := r.Tool(name); ok {
			return t, true
		}
	}
	return Tool{}, false
}

// clone copies what a test may read, so that later updates by the server do
// not race with it.
func (r *Request) clone() *Request {
	c := *r
	c.Messages = append([]Message(nil), r.Messages...)
	c.Tools = append([]Tool(nil), r.Tools...)
	return &c
}

// credentialHeaders hold secrets: recorded as "REDACTED".
var credentialHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Cookie", "Proxy-Authorization"}

func redactHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range credentialHeaders {
		if _, ok := out[k]; ok {
			out[k] = []string{"REDACTED"}
		}
	}
	return out
}

func redactQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		if strings.EqualFold(k, "key") || strings.EqualFold(k, "api_key") {
			v = []string{"REDACTED"}
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}
