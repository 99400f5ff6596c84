package ochttp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The mode and the MCP servers go into the own server's inline config,
// on top of what it already said; nothing asked leaves the env alone.
func TestLaunchConfig(t *testing.T) {
	env := []string{"A=1", `OPENCODE_CONFIG_CONTENT={"model":"fake/m"}`}
	out, err := launchConfig(env, runtime.OpenRequest{PermissionMode: runtime.ModeAcceptEdits, Agent: "build",
		Launch: runtime.LaunchContext{MCPServers: []runtime.MCPServer{{Name: "probe", Type: runtime.MCPStdio, Command: "/bin/probe",
			Args: []string{"-v"}, Env: []runtime.NameValue{{Name: "K", Value: "v"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var content string
	for _, kv := range out {
		if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
			content = v
		}
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(content), &cfg); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg)
	want := `{"agent":{"build":{"permission":{"bash":"ask","edit":"allow"}}},"mcp":{"probe":{"command":["/bin/probe","-v"],"enabled":true,"environment":{"K":"v"},"type":"local"}},"model":"fake/m","permission":{"bash":"ask","edit":"allow"}}`
	if string(got) != want || len(out) != 2 {
		t.Errorf("env %q\ncontent %s\nwant    %s", out, got, want)
	}
	same, err := launchConfig(env, runtime.OpenRequest{})
	if err != nil || strings.Join(same, "\n") != strings.Join(env, "\n") {
		t.Errorf("nothing asked changed the env: %q %v", same, err)
	}
}

// An external server keeps its own config: a mode for it is refused.
func TestExternalServerRefusesMode(t *testing.T) {
	_, err := Backend{}.Open(t.Context(), runtime.OpenRequest{Dir: t.TempDir(), ServerURL: "http://127.0.0.1:1", PermissionMode: runtime.ModePlan}, nil)
	if err == nil || runtime.FaultOf(err) != runtime.FaultUser || !strings.Contains(err.Error(), "external server") {
		t.Fatalf("Open = %v; want the mode refused for an external server", err)
	}
}
