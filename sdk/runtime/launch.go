package runtime

import (
	"fmt"
	"sort"
	"strings"
)

// PermissionMode says what a session's turns may do without asking: the
// one vocabulary every backend maps onto its runtime's own controls
// (docs/permission-handler.md#permission-modes). Empty means no mode was
// asked for: the runtime behaves exactly as it does without one.
type PermissionMode string

// String returns the mode as --permission-mode spells it.
func (m PermissionMode) String() string { return string(m) }

// Permission modes.
const (
	// ModeDefault asks before edits and before commands.
	ModeDefault PermissionMode = "default"
	// ModeAcceptEdits allows edits and asks before commands.
	ModeAcceptEdits PermissionMode = "accept-edits"
	// ModePlan denies edits and commands: the turn may only read.
	ModePlan PermissionMode = "plan"
	// ModeFullAccess allows edits and commands.
	ModeFullAccess PermissionMode = "full-access"
)

// PermissionModes is the whole --permission-mode vocabulary, in order.
var PermissionModes = []PermissionMode{ModeDefault, ModeAcceptEdits, ModePlan, ModeFullAccess}

// ParsePermissionMode checks a --permission-mode value; empty is no mode.
func ParsePermissionMode(s string) (PermissionMode, error) {
	for _, m := range PermissionModes {
		if string(m) == s {
			return m, nil
		}
	}
	if s == "" {
		return "", nil
	}
	return "", fmt.Errorf("invalid permission mode %q; valid modes: default, accept-edits, plan, full-access", s)
}

// Allows is what the mode lets a turn do without asking: "allow", "ask"
// or "deny" for edits and for commands; empty for no mode.
func (m PermissionMode) Allows() (edits, commands string) {
	switch m {
	case ModeDefault:
		return "ask", "ask"
	case ModeAcceptEdits:
		return "allow", "ask"
	case ModePlan:
		return "deny", "deny"
	case ModeFullAccess:
		return "allow", "allow"
	}
	return "", ""
}

// ModeCapability is the capability row that says whether a backend honours
// mode natively ("permission_mode_plan", ...).
func ModeCapability(m PermissionMode) Capability {
	return Capability("permission_mode_" + strings.ReplaceAll(string(m), "-", "_"))
}

// Capability rows of the launch context: whether a backend passes each
// field to its runtime natively. Absent, as every capability, means
// unsupported: the host refuses the field before anything starts.
const (
	CapAppendSystemPrompt Capability = "append_system_prompt"
	CapAllowedTools       Capability = "allowed_tools"
	CapMCPServers         Capability = "mcp_servers"
)

// LaunchCapabilityNames lists the rows of the launch matrix in display
// order: one per permission mode, then one per launch-context field, then
// whether the runtime can be launched inside a sandbox.
var LaunchCapabilityNames = []Capability{
	ModeCapability(ModeDefault), ModeCapability(ModeAcceptEdits), ModeCapability(ModePlan),
	ModeCapability(ModeFullAccess), CapAppendSystemPrompt, CapAllowedTools, CapMCPServers,
	CapSandbox,
}

// SupportedModes lists the modes b declares supported.
func (b BackendInfo) SupportedModes() []PermissionMode {
	var out []PermissionMode
	for _, m := range PermissionModes {
		if b.Capability(ModeCapability(m)) != Unsupported {
			out = append(out, m)
		}
	}
	return out
}

// LaunchContext is what a session starts with besides its prompt: standing
// instructions, the tools it may use and the MCP servers it may reach. The
// zero value asks for nothing: the runtime's defaults.
type LaunchContext struct {
	// AppendSystemPrompt is appended to the runtime's system prompt.
	AppendSystemPrompt string
	// AllowedTools, when not nil, is the exact list of tools, in the
	// runtime's own names; an empty non-nil list allows no tool. Nil keeps
	// the runtime's defaults.
	AllowedTools []string
	// MCPServers are the servers the session may use, by name.
	MCPServers []MCPServer
}

// IsZero reports whether l asks for nothing.
func (l LaunchContext) IsZero() bool {
	return l.AppendSystemPrompt == "" && l.AllowedTools == nil && len(l.MCPServers) == 0
}

// MCP server transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// MCPServer is one MCP server definition in the shape Claude Code and ACP
// use: a stdio command with args and env, or an HTTP (or SSE) url with
// headers. Env and header values may be credentials: they are resolved by
// the host from the environment variables the definition names and are
// never put in argv or events (Redacted is the printable form).
type MCPServer struct {
	Name    string
	Type    string // MCPStdio, MCPHTTP or MCPSSE
	Command string
	Args    []string
	Env     []NameValue
	URL     string
	Headers []NameValue
}

// NameValue is one environment variable or header.
type NameValue struct {
	Name  string
	Value string
}

// String prints s without its env and header values (they may be
// credentials), so that a server logged or printed with %v never shows
// them.
func (s MCPServer) String() string {
	var names []string
	for _, nv := range s.Env {
		names = append(names, "env "+nv.Name)
	}
	for _, nv := range s.Headers {
		names = append(names, "header "+nv.Name)
	}
	where := s.Command
	if s.URL != "" {
		where = s.URL
	}
	return fmt.Sprintf("mcp server %q (%s %s; %s)", s.Name, s.Type, where, strings.Join(names, ", "))
}

// GoString is String, for %#v.
func (s MCPServer) GoString() string { return s.String() }

// String prints the name only: the value may be a credential.
func (nv NameValue) String() string { return nv.Name + "=[redacted]" }

// GoString is String, for %#v.
func (nv NameValue) GoString() string { return nv.String() }

// Redacted is s with every env and header value replaced, to print or log.
func (s MCPServer) Redacted() MCPServer {
	r := s
	r.Args = append([]string(nil), s.Args...)
	r.Env = redactValues(s.Env)
	r.Headers = redactValues(s.Headers)
	return r
}

func redactValues(in []NameValue) []NameValue {
	if in == nil {
		return nil
	}
	out := make([]NameValue, len(in))
	for i, nv := range in {
		out[i] = NameValue{Name: nv.Name, Value: "[redacted]"}
	}
	return out
}

// EnvMap is s's env as a map.
func (s MCPServer) EnvMap() map[string]string {
	return nameValueMap(s.Env)
}

// HeaderMap is s's headers as a map.
func (s MCPServer) HeaderMap() map[string]string {
	return nameValueMap(s.Headers)
}

func nameValueMap(in []NameValue) map[string]string {
	m := make(map[string]string, len(in))
	for _, nv := range in {
		m[nv.Name] = nv.Value
	}
	return m
}

// SortedNameValues turns a map into NameValues sorted by name.
func SortedNameValues(m map[string]string) []NameValue {
	if len(m) == 0 {
		return nil
	}
	out := make([]NameValue, 0, len(m))
	for k, v := range m {
		out = append(out, NameValue{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// CheckLaunch refuses a mode or launch-context field b does not declare:
// the error names the backend and what it supports. A zero mode and a zero
// launch context are always accepted.
func CheckLaunch(b BackendInfo, mode PermissionMode, lc LaunchContext) error {
	if mode != "" {
		if _, err := ParsePermissionMode(string(mode)); err != nil {
			return err
		}
		if b.Capability(ModeCapability(mode)) == Unsupported {
			modes := b.SupportedModes()
			if len(modes) == 0 {
				return fmt.Errorf("backend %q does not support --permission-mode (no mode is supported)", b.Name)
			}
			names := make([]string, len(modes))
			for i, m := range modes {
				names[i] = string(m)
			}
			return fmt.Errorf("backend %q does not support permission mode %q; supported modes: %s", b.Name, mode, strings.Join(names, ", "))
		}
	}
	for _, f := range []struct {
		set  bool
		cap  Capability
		flag string
	}{
		{lc.AppendSystemPrompt != "", CapAppendSystemPrompt, "--append-system-prompt"},
		{lc.AllowedTools != nil, CapAllowedTools, "--allowed-tools"},
		{len(lc.MCPServers) > 0, CapMCPServers, "--mcp-config"},
	} {
		if f.set && b.Capability(f.cap) == Unsupported {
			return fmt.Errorf("backend %q does not support %s (launch context field %q)", b.Name, f.flag, f.cap)
		}
	}
	return nil
}
