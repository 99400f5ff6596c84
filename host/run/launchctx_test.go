package run

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/config"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestAllowedToolsBounds(t *testing.T) {
	names := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint("t", i)
		}
		return strings.Join(parts, ",")
	}
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"", []string{}, ""},
		{" Read , Bash(git:*) ", []string{"Read", "Bash(git:*)"}, ""},
		{names(MaxAllowedTools), nil, ""},
		{names(MaxAllowedTools + 1), nil, "257 tools is over the limit of 256"},
		{strings.Repeat("x", MaxToolName), []string{strings.Repeat("x", MaxToolName)}, ""},
		{strings.Repeat("x", MaxToolName+1), nil, "entry 1 is not a tool name"},
		{"a,,b", nil, "entry 2 is empty"},
	} {
		got, err := allowedTools("--allowed-tools", tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%.40q: got %v, want an error with %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%.40q: %v", tc.in, err)
		case tc.want != nil && !reflect.DeepEqual(got, tc.want):
			t.Errorf("%.40q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLoadMCPConfig(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "HOST": "mcp.example"}
	getenv := func(k string) string { return env[k] }
	servers := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"s%d":{"command":"/bin/true"}`, i)
		}
		return `{"mcpServers":{` + strings.Join(parts, ",") + `}}`
	}
	for _, tc := range []struct {
		name, json string
		want       []sdk.MCPServer
		err        string
	}{
		{"stdio and http, env resolved", `{"mcpServers":{
			"web":{"type":"http","url":"https://${HOST}/x","headers":{"Authorization":"Bearer ${TOKEN}"}},
			"fs":{"command":"/bin/fs","args":["-v"],"env":{"K":"${TOKEN}","PLAIN":"v"}}}}`,
			[]sdk.MCPServer{
				{Name: "fs", Type: sdk.MCPStdio, Command: "/bin/fs", Args: []string{"-v"}, Env: []sdk.NameValue{{Name: "K", Value: "s3cret"}, {Name: "PLAIN", Value: "v"}}},
				{Name: "web", Type: sdk.MCPHTTP, URL: "https://${HOST}/x", Headers: []sdk.NameValue{{Name: "Authorization", Value: "Bearer s3cret"}}},
			}, ""},
		{"at the server limit", servers(MaxMCPServers), nil, ""},
		{"over the server limit", servers(MaxMCPServers + 1), nil, "33 servers is over the limit of 32"},
		{"unset variable", `{"mcpServers":{"s":{"command":"x","env":{"K":"${NOPE}"}}}}`, nil, "environment variable NOPE is not set"},
		{"bad reference", `{"mcpServers":{"s":{"command":"x","env":{"K":"${1X}"}}}}`, nil, `"${1X}" is not an environment variable reference`},
		{"unknown field", `{"mcpServers":{"s":{"command":"x","cwd":"/"}}}`, nil, `unknown field "cwd"`},
		{"no servers", `{"mcpServers":{}}`, nil, "defines no server"},
		{"not the shape", `{"servers":{}}`, nil, `unknown field "servers"`},
		{"stdio with a url", `{"mcpServers":{"s":{"command":"x","url":"http://a"}}}`, nil, "a stdio server has a command"},
		{"bad type", `{"mcpServers":{"s":{"type":"ws","url":"http://a"}}}`, nil, `type "ws" is not stdio, http or sse`},
		{"not http url", `{"mcpServers":{"s":{"url":"file:///x"}}}`, nil, "is not http:// or https://"},
		{"bad name", `{"mcpServers":{"a b":{"command":"x"}}}`, nil, "a server name is 1 to 64"},
		{"trailing text", `{"mcpServers":{"s":{"command":"x"}}} {}`, nil, "text after the JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mcp.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadMCPConfig(path, getenv)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error with %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.want != nil && !reflect.DeepEqual(got, tc.want):
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMCPConfigSizeBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"s":{"command":"x"}}}`+strings.Repeat(" ", MaxMCPConfigBytes)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMCPConfig(path, nil); err == nil {
		t.Fatal("a file over MaxMCPConfigBytes was read")
	}
}

// An unset allowed_tools keeps the runtime's defaults (nil); one set to ""
// at any layer is the empty list.
func TestLaunchSettingsToolsProvenance(t *testing.T) {
	l, err := LaunchSettings(config.Settings{}, config.Provenance{"allowed_tools": config.LayerDefault}, nil)
	if err != nil || l.Context.AllowedTools != nil {
		t.Fatalf("unset: %+v %v", l, err)
	}
	l, err = LaunchSettings(config.Settings{}, config.Provenance{"allowed_tools": config.LayerFlag}, nil)
	if err != nil || l.Context.AllowedTools == nil || len(l.Context.AllowedTools) != 0 {
		t.Fatalf("set empty: %+v %v", l, err)
	}
}
