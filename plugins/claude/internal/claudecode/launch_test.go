package claudecode

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The launch context reaches Claude Code natively, and no MCP credential
// or system prompt text is ever in its argv: they go to 0600 files that
// Remove deletes.
func TestLaunchArgs(t *testing.T) {
	args, files, err := launchArgs(runtime.OpenRequest{PermissionMode: runtime.ModePlan, Launch: runtime.LaunchContext{
		AppendSystemPrompt: "STANDING", AllowedTools: []string{"Read", "Grep"},
		MCPServers: []runtime.MCPServer{{Name: "srv", Type: runtime.MCPStdio, Command: "/bin/srv",
			Env: []runtime.NameValue{{Name: "TOKEN", Value: "s3cret"}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Remove()
	joined := strings.Join(args, " ")
	if strings.Contains(joined, "s3cret") || strings.Contains(joined, "STANDING") {
		t.Fatalf("argv carries the launch context's text: %q", args)
	}
	for _, want := range []string{"--permission-mode plan", "--tools Read,Grep", "--strict-mcp-config", "--append-system-prompt-file " + files.dir} {
		if !strings.Contains(joined, want) {
			t.Errorf("argv %q lacks %q", joined, want)
		}
	}
	mcp := filepath.Join(files.dir, "mcp.json")
	st, err := os.Stat(mcp)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mcp.json: %v %v", st, err)
	}
	data, _ := os.ReadFile(mcp)
	if !strings.Contains(string(data), `"TOKEN":"s3cret"`) || !strings.Contains(string(data), `"command":"/bin/srv"`) {
		t.Fatalf("mcp.json = %s", data)
	}
	files.Remove()
	if _, err := os.Stat(files.dir); !os.IsNotExist(err) {
		t.Fatalf("launch files left behind: %v", err)
	}
}

func TestLaunchArgsModes(t *testing.T) {
	for mode, want := range map[runtime.PermissionMode][]string{
		"":                      nil,
		runtime.ModeDefault:     {"--permission-mode", "default"},
		runtime.ModeAcceptEdits: {"--permission-mode", "default"},
		runtime.ModeFullAccess:  {"--permission-mode", "acceptEdits"},
	} {
		args, files, err := launchArgs(runtime.OpenRequest{PermissionMode: mode})
		if err != nil || files != nil || !reflect.DeepEqual(args, want) {
			t.Errorf("%q: %q %v %v; want %q", mode, args, files, err, want)
		}
	}
	args, _, _ := launchArgs(runtime.OpenRequest{Launch: runtime.LaunchContext{AllowedTools: []string{}}})
	if !reflect.DeepEqual(args, []string{"--tools", ""}) {
		t.Errorf("no tools: %q", args)
	}
}
