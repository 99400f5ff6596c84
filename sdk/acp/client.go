package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// ProtocolVersion is the ACP major version avenor speaks.
const ProtocolVersion = 1

// Implementation names a client or an agent (clientInfo, agentInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
}

// initializeParams is what avenor offers (docs/backends.md#opencode-acp-plugin-opencode): no file system and
// no terminal, so agents do their own I/O and avenor only observes.
type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
	ClientInfo         Implementation     `json:"clientInfo"`
}

type clientCapabilities struct {
	FS       fsCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

type fsCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// InitializeResult is the agent's answer to initialize.
type InitializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo"`
}

// AgentCapabilities is the part of agentCapabilities avenor acts on.
type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	MCPCapabilities     MCPCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
}

// MCPCapabilities say which MCP transports besides stdio the agent takes.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// SessionCapabilities are objects: {} means supported, absent or null not.
type SessionCapabilities struct {
	Resume json.RawMessage `json:"resume"`
	List   json.RawMessage `json:"list"`
	Close  json.RawMessage `json:"close"`
}

// CanResume reports whether session/resume is advertised.
func (c SessionCapabilities) CanResume() bool { return present(c.Resume) }

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && !bytes.Equal(raw, []byte("false"))
}

// AuthMethod is one entry of authMethods.
type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// SessionSetup is what session/new, session/load and session/resume return:
// the id (new only), classic modes and models, and config options.
type SessionSetup struct {
	SessionID     string         `json:"sessionId"`
	Modes         *SessionModes  `json:"modes"`
	Models        *SessionModels `json:"models"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// SessionModes is the classic modes object.
type SessionModes struct {
	CurrentModeID  string `json:"currentModeId"`
	AvailableModes []struct {
		ID   string `json:"id"`
		Name string `json:"name,omitempty"`
	} `json:"availableModes"`
}

// IDs lists the available mode ids.
func (m *SessionModes) IDs() []string {
	var out []string
	for _, x := range m.AvailableModes {
		out = append(out, x.ID)
	}
	return out
}

// SessionModels is the models object of session/new that agents on older
// ACP SDKs still return (Gemini CLI); session/set_model switches it.
type SessionModels struct {
	CurrentModelID  string `json:"currentModelId"`
	AvailableModels []struct {
		ModelID string `json:"modelId"`
		Name    string `json:"name,omitempty"`
	} `json:"availableModels"`
}

// IDs lists the available model ids.
func (m *SessionModels) IDs() []string {
	var out []string
	for _, x := range m.AvailableModels {
		out = append(out, x.ModelID)
	}
	return out
}

// ConfigOption is one session config option (category mode, model, …).
type ConfigOption struct {
	ID           string          `json:"id"`
	Name         string          `json:"name,omitempty"`
	Category     string          `json:"category,omitempty"`
	Type         string          `json:"type,omitempty"`
	CurrentValue json.RawMessage `json:"currentValue,omitempty"`
	Options      json.RawMessage `json:"options,omitempty"`
}

// Current is the current value of a select option ("" otherwise).
func (o ConfigOption) Current() string {
	var s string
	_ = json.Unmarshal(o.CurrentValue, &s)
	return s
}

// Values lists a select option's values, flattening groups.
func (o ConfigOption) Values() []string {
	var items []struct {
		Value   *string         `json:"value"`
		Options json.RawMessage `json:"options"`
	}
	if json.Unmarshal(o.Options, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if it.Value != nil {
			out = append(out, *it.Value)
			continue
		}
		if len(it.Options) > 0 {
			out = append(out, ConfigOption{Options: it.Options}.Values()...)
		}
	}
	return out
}

// findOption is the config option of a category ("model", "mode"),
// matched by category first, then by id.
func findOption(opts []ConfigOption, category string) *ConfigOption {
	for i := range opts {
		if opts[i].Category == category {
			return &opts[i]
		}
	}
	for i := range opts {
		if opts[i].ID == category {
			return &opts[i]
		}
	}
	return nil
}

// ContentBlock is a prompt content block; avenor sends text.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type sessionParams struct {
	SessionID  string `json:"sessionId,omitempty"`
	Cwd        string `json:"cwd"`
	MCPServers []any  `json:"mcpServers"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

type sessionOnly struct {
	SessionID string `json:"sessionId"`
}

type setConfigOptionParams struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     any    `json:"value"`
}

type setModeParams struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type setModelParams struct {
	SessionID string `json:"sessionId"`
	ModelID   string `json:"modelId"`
}

// Client makes the ACP calls over a Conn.
type Client struct {
	conn *Conn
	// mcp is session/new's (and load's, resume's) mcpServers, never nil.
	mcp []any
}

// SetMCPServers gives session/new, session/load and session/resume the
// MCP servers of the session's launch context, in ACP's shape: stdio
// {name, command, args, env:[{name,value}]}, http and sse {type, name,
// url, headers:[{name,value}]}. They travel on the agent's stdin only.
func (c *Client) SetMCPServers(servers []runtime.MCPServer) {
	c.mcp = MCPServersParam(servers)
}

// MCPServersParam is servers as ACP's mcpServers; an empty list, never
// null, when there are none.
func MCPServersParam(servers []runtime.MCPServer) []any {
	out := make([]any, 0, len(servers))
	for _, s := range servers {
		switch s.Type {
		case runtime.MCPHTTP, runtime.MCPSSE:
			out = append(out, map[string]any{"type": s.Type, "name": s.Name, "url": s.URL, "headers": nameValuesParam(s.Headers)})
		default:
			args := s.Args
			if args == nil {
				args = []string{}
			}
			out = append(out, map[string]any{"name": s.Name, "command": s.Command, "args": args, "env": nameValuesParam(s.Env)})
		}
	}
	return out
}

func nameValuesParam(in []runtime.NameValue) []any {
	out := make([]any, 0, len(in))
	for _, nv := range in {
		out = append(out, map[string]any{"name": nv.Name, "value": nv.Value})
	}
	return out
}

func (c *Client) mcpServers() []any {
	if c.mcp == nil {
		return []any{}
	}
	return c.mcp
}

// NewClient wraps conn.
func NewClient(conn *Conn) *Client { return &Client{conn: conn} }

// Conn is the underlying connection.
func (c *Client) Conn() *Conn { return c.conn }

// InitializeCall starts initialize and returns at once, so that the caller
// can watch the agent's process while it waits.
func (c *Client) InitializeCall(info Implementation) *Call {
	return c.conn.Go("initialize", initializeParams{ProtocolVersion: ProtocolVersion, ClientInfo: info})
}

// Authenticate calls authenticate with methodID.
func (c *Client) Authenticate(ctx context.Context, methodID string) error {
	return c.conn.Call(ctx, "authenticate", map[string]string{"methodId": methodID}, nil)
}

// NewSession calls session/new in cwd.
func (c *Client) NewSession(ctx context.Context, cwd string) (SessionSetup, error) {
	var out SessionSetup
	err := c.conn.Call(ctx, "session/new", sessionParams{Cwd: cwd, MCPServers: c.mcpServers()}, &out)
	if err == nil && out.SessionID == "" {
		err = fmt.Errorf("acp: session/new answered without a sessionId")
	}
	return out, err
}

// LoadSession calls session/load; the agent replays the conversation as
// session/update notifications (before or, Gemini, after its answer).
func (c *Client) LoadSession(ctx context.Context, id, cwd string) (SessionSetup, error) {
	return c.reopen(ctx, "session/load", id, cwd)
}

// ResumeSession calls session/resume (no replay).
func (c *Client) ResumeSession(ctx context.Context, id, cwd string) (SessionSetup, error) {
	return c.reopen(ctx, "session/resume", id, cwd)
}

func (c *Client) reopen(ctx context.Context, method, id, cwd string) (SessionSetup, error) {
	var out *SessionSetup // the answer may be null
	if err := c.conn.Call(ctx, method, sessionParams{SessionID: id, Cwd: cwd, MCPServers: c.mcpServers()}, &out); err != nil {
		return SessionSetup{}, err
	}
	if out == nil {
		out = &SessionSetup{}
	}
	out.SessionID = id
	return *out, nil
}

// SetConfigOption sets a select option and returns the new option set
// (nil when the agent returned none).
func (c *Client) SetConfigOption(ctx context.Context, sessionID, configID, value string) ([]ConfigOption, error) {
	var out struct {
		ConfigOptions []ConfigOption `json:"configOptions"`
	}
	err := c.conn.Call(ctx, "session/set_config_option", setConfigOptionParams{SessionID: sessionID, ConfigID: configID, Value: value}, &out)
	return out.ConfigOptions, err
}

// SetMode calls session/set_mode.
func (c *Client) SetMode(ctx context.Context, sessionID, modeID string) error {
	return c.conn.Call(ctx, "session/set_mode", setModeParams{SessionID: sessionID, ModeID: modeID}, nil)
}

// SetModel calls session/set_model, the unstable call that ACP has since
// replaced by the model config option but Gemini CLI still serves.
func (c *Client) SetModel(ctx context.Context, sessionID, modelID string) error {
	return c.conn.Call(ctx, "session/set_model", setModelParams{SessionID: sessionID, ModelID: modelID}, nil)
}

// PromptCall starts session/prompt with text; the answer ends the turn.
// answered (may be nil) runs in stream order as the answer arrives.
func (c *Client) PromptCall(sessionID, text string, answered func()) *Call {
	return c.conn.GoWith("session/prompt", promptParams{SessionID: sessionID, Prompt: []ContentBlock{{Type: "text", Text: text}}}, answered)
}

// Cancel sends session/cancel.
func (c *Client) Cancel(sessionID string) error {
	return c.conn.Notify("session/cancel", sessionOnly{SessionID: sessionID})
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func listOrNone(list []string) string {
	if len(list) == 0 {
		return "(none listed)"
	}
	return strings.Join(list, ", ")
}
