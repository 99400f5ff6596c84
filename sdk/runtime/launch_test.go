package runtime

import (
	"fmt"
	"strings"
	"testing"
)

func TestCheckLaunch(t *testing.T) {
	plan := BackendInfo{Name: "b", Capabilities: Supports(ModeCapability(ModePlan), ModeCapability(ModeDefault), CapAllowedTools)}
	none := BackendInfo{Name: "old"}
	for _, tc := range []struct {
		name string
		info BackendInfo
		mode PermissionMode
		lc   LaunchContext
		want string // substring of the error; empty: accepted
	}{
		{"nothing asked of an old backend", none, "", LaunchContext{}, ""},
		{"declared mode", plan, ModePlan, LaunchContext{}, ""},
		{"undeclared mode names the supported ones", plan, ModeFullAccess, LaunchContext{}, `backend "b" does not support permission mode "full-access"; supported modes: default, plan`},
		{"no mode at all", none, ModePlan, LaunchContext{}, `backend "old" does not support --permission-mode`},
		{"unknown mode", plan, "yolo", LaunchContext{}, `invalid permission mode "yolo"`},
		{"declared tools, empty list", plan, "", LaunchContext{AllowedTools: []string{}}, ""},
		{"undeclared tools, empty list", none, "", LaunchContext{AllowedTools: []string{}}, "--allowed-tools"},
		{"undeclared prompt", plan, "", LaunchContext{AppendSystemPrompt: "x"}, "--append-system-prompt"},
		{"undeclared mcp", plan, "", LaunchContext{MCPServers: []MCPServer{{Name: "s"}}}, "--mcp-config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLaunch(tc.info, tc.mode, tc.lc)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestModeAllows(t *testing.T) {
	for m, want := range map[PermissionMode][2]string{
		ModeDefault: {"ask", "ask"}, ModeAcceptEdits: {"allow", "ask"}, ModePlan: {"deny", "deny"},
		ModeFullAccess: {"allow", "allow"}, "": {"", ""},
	} {
		if e, c := m.Allows(); e != want[0] || c != want[1] {
			t.Errorf("%q allows edits %q commands %q, want %v", m, e, c, want)
		}
	}
}

func TestMCPServerRedacted(t *testing.T) {
	s := MCPServer{Name: "s", Env: []NameValue{{Name: "TOKEN", Value: "secret"}}, Headers: []NameValue{{Name: "Authorization", Value: "Bearer secret"}}}
	for _, printed := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v", []MCPServer{s}, s.Env), fmt.Sprintf("%v", LaunchContext{MCPServers: []MCPServer{s}}), fmt.Sprintf("%#v", s)} {
		if strings.Contains(printed, "secret") {
			t.Errorf("printed with its credentials: %s", printed)
		}
	}
	r := s.Redacted()
	if strings.Contains(r.Env[0].Value+r.Headers[0].Value, "secret") || s.Env[0].Value != "secret" {
		t.Fatalf("redacted %+v from %+v", r, s)
	}
}
