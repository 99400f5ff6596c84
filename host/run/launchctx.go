package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the launch context (docs/configuration.md#bounds).
const (
	// MaxAllowedTools bounds --allowed-tools' entries.
	MaxAllowedTools = 256
	// MaxToolName bounds one --allowed-tools entry, in bytes.
	MaxToolName = 256
	// MaxMCPConfigBytes bounds the --mcp-config file.
	MaxMCPConfigBytes = 1 << 20
	// MaxMCPServers bounds the servers one --mcp-config defines.
	MaxMCPServers = 32
)

// Launch is a run's permission mode and launch context as the command line
// and the config gave them, validated; the zero value asks for nothing.
type Launch struct {
	Mode    sdk.PermissionMode
	Context sdk.LaunchContext
}

// LaunchSettings reads the permission mode and launch context from the
// layered settings (docs/run.md#permission-modes-and-launch-context): the
// mode's vocabulary; --append-system-prompt TEXT or @FILE (UTF-8, at most
// sdk.MaxPromptBytes); --allowed-tools a,b when it was set at all ("" is
// no tool); --mcp-config FILE, whose ${NAME} values getenv must resolve.
// Errors name the flag and what to fix. Whether the backend honours what
// was asked is the runner's check, once the plugin has described it.
func LaunchSettings(s config.Settings, prov config.Provenance, getenv func(string) string) (Launch, error) {
	return readLaunch(s, prov, getenv, FlagName)
}

// readLaunch is LaunchSettings with name naming a key in its errors
// (FlagName for avenor run's flags, the key itself for a spawn's params).
func readLaunch(s config.Settings, prov config.Provenance, getenv func(string) string, name func(string) string) (Launch, error) {
	var l Launch
	mode, err := sdk.ParsePermissionMode(s.PermissionMode)
	if err != nil {
		return Launch{}, fmt.Errorf("%s: %w", name("permission_mode"), err)
	}
	l.Mode = mode
	if l.Context.AppendSystemPrompt, err = appendSystemPrompt(name("append_system_prompt"), s.AppendSystemPrompt); err != nil {
		return Launch{}, err
	}
	if layer, ok := prov["allowed_tools"]; ok && layer != config.LayerDefault {
		if l.Context.AllowedTools, err = allowedTools(name("allowed_tools"), s.AllowedTools); err != nil {
			return Launch{}, err
		}
	}
	if s.MCPConfig != "" {
		if l.Context.MCPServers, err = loadMCPConfig(name("mcp_config"), s.MCPConfig, getenv); err != nil {
			return Launch{}, err
		}
	}
	return l, nil
}

// appendSystemPrompt is the text of --append-system-prompt (flag): itself,
// or the file after an @.
func appendSystemPrompt(flag, v string) (string, error) {
	if path, ok := strings.CutPrefix(v, "@"); ok {
		if path == "" {
			return "", errors.New(flag + " @: name the file after the @")
		}
		text, err := ReadPromptFile(flag, path)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(text) == "" {
			return "", fmt.Errorf("%s %s: the file is empty", flag, v)
		}
		return text, nil
	}
	return v, sdk.CheckPrompt(flag, v)
}

// allowedTools splits --allowed-tools (flag); "" is the empty list (no
// tool).
func allowedTools(flag, v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{}, nil
	}
	parts := strings.Split(v, ",")
	if len(parts) > MaxAllowedTools {
		return nil, fmt.Errorf("%s: %d tools is over the limit of %d", flag, len(parts), MaxAllowedTools)
	}
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("%s: entry %d is empty; give tool names separated by commas, or \"\" for no tool", flag, i+1)
		case len(p) > MaxToolName || !utf8.ValidString(p):
			return nil, fmt.Errorf("%s: entry %d is not a tool name (UTF-8, at most %d bytes)", flag, i+1, MaxToolName)
		}
		out = append(out, p)
	}
	return out, nil
}

// mcpFile is the --mcp-config file: Claude Code's shape.
type mcpFile struct {
	MCPServers map[string]mcpEntry `json:"mcpServers"`
}

type mcpEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

var (
	mcpNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	envRefRE  = regexp.MustCompile(`\$\{([^}]*)\}`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// LoadMCPConfig reads an --mcp-config file ({"mcpServers":{"<name>":
// {"command","args","env"} or {"type":"http"|"sse","url","headers"}}}).
// An env or header value may reference environment variables as ${NAME}:
// they are resolved here, and one that is unset is refused. Unknown fields
// are refused, so that a misspelt key never silently drops a setting.
// The result is sorted by name; its values are secrets (MCPServer.Redacted
// prints them).
func LoadMCPConfig(path string, getenv func(string) string) ([]sdk.MCPServer, error) {
	return loadMCPConfig("--mcp-config", path, getenv)
}

// loadMCPConfig is LoadMCPConfig, its errors naming flag.
func loadMCPConfig(flag, path string, getenv func(string) string) ([]sdk.MCPServer, error) {
	data, err := regularfile.ReadFileMax(path, MaxMCPConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f mcpFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s %s: not an MCP server definitions file ({\"mcpServers\": {\"<name>\": {...}}}): %v", flag, path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s %s: text after the JSON object", flag, path)
	}
	switch {
	case f.MCPServers == nil:
		return nil, fmt.Errorf("%s %s: no \"mcpServers\" object", flag, path)
	case len(f.MCPServers) == 0:
		return nil, fmt.Errorf("%s %s: \"mcpServers\" defines no server", flag, path)
	case len(f.MCPServers) > MaxMCPServers:
		return nil, fmt.Errorf("%s %s: %d servers is over the limit of %d", flag, path, len(f.MCPServers), MaxMCPServers)
	}
	names := make([]string, 0, len(f.MCPServers))
	for name := range f.MCPServers {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]sdk.MCPServer, 0, len(names))
	for _, name := range names {
		s, err := mcpServer(name, f.MCPServers[name], getenv)
		if err != nil {
			return nil, fmt.Errorf("%s %s: server %q: %w", flag, path, name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// mcpServer checks one definition and resolves its ${NAME} values.
func mcpServer(name string, e mcpEntry, getenv func(string) string) (sdk.MCPServer, error) {
	if !mcpNameRE.MatchString(name) {
		return sdk.MCPServer{}, errors.New("a server name is 1 to 64 letters, digits, _ or -")
	}
	s := sdk.MCPServer{Name: name, Type: e.Type, Command: e.Command, Args: e.Args, URL: e.URL}
	switch {
	case s.Type == "" && s.Command != "":
		s.Type = sdk.MCPStdio
	case s.Type == "" && s.URL != "":
		s.Type = sdk.MCPHTTP
	}
	switch s.Type {
	case sdk.MCPStdio:
		if s.Command == "" || s.URL != "" || len(e.Headers) > 0 {
			return sdk.MCPServer{}, errors.New("a stdio server has a command (and args, env), no url or headers")
		}
	case sdk.MCPHTTP, sdk.MCPSSE:
		if s.URL == "" || s.Command != "" || len(s.Args) > 0 || len(e.Env) > 0 {
			return sdk.MCPServer{}, errors.New("an http or sse server has a url (and headers), no command, args or env")
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return sdk.MCPServer{}, fmt.Errorf("url %q is not http:// or https://", s.URL)
		}
	case "":
		return sdk.MCPServer{}, errors.New("give a command (stdio) or a url (http)")
	default:
		return sdk.MCPServer{}, fmt.Errorf("type %q is not stdio, http or sse", s.Type)
	}
	env, err := resolveValues("env", e.Env, getenv)
	if err != nil {
		return sdk.MCPServer{}, err
	}
	headers, err := resolveValues("header", e.Headers, getenv)
	if err != nil {
		return sdk.MCPServer{}, err
	}
	s.Env, s.Headers = sdk.SortedNameValues(env), sdk.SortedNameValues(headers)
	return s, nil
}

// resolveValues replaces every ${NAME} in the values of m with the
// environment variable NAME, which must be set.
func resolveValues(what string, m map[string]string, getenv func(string) string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k == "" {
			return nil, fmt.Errorf("an %s has an empty name", what)
		}
		var missing error
		out[k] = envRefRE.ReplaceAllStringFunc(v, func(ref string) string {
			name := ref[2 : len(ref)-1]
			if !envNameRE.MatchString(name) {
				missing = fmt.Errorf("%s %s: %q is not an environment variable reference (${NAME})", what, k, ref)
				return ""
			}
			val := ""
			if getenv != nil {
				val = getenv(name)
			}
			if val == "" && missing == nil {
				missing = fmt.Errorf("%s %s: environment variable %s is not set; export it before the run", what, k, name)
			}
			return val
		})
		if missing != nil {
			return nil, missing
		}
	}
	return out, nil
}
