package client

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestSpawnFlagsParams: what `avenor control spawn`'s flags send: only the
// values given, max_retries even as 0 when given, paths made absolute, and
// each refusal naming the flag.
func TestSpawnFlagsParams(t *testing.T) {
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	for _, tc := range []struct {
		name string
		f    SpawnFlags
		want SpawnParams
		err  string
	}{
		{name: "nothing to run", f: SpawnFlags{}, err: "--prompt, --prompt-file, --loop-file, or --team-file is required"},
		{name: "two prompts", f: SpawnFlags{P: SpawnParams{Prompt: "a", PromptFile: "b"}}, err: "--prompt and --prompt-file are mutually exclusive"},
		{name: "handler not a file", f: SpawnFlags{P: SpawnParams{Prompt: "a", PermissionHandler: "stdio"}}, err: "--permission-handler supports file:<path> only"},
		{name: "handler without base", f: SpawnFlags{P: SpawnParams{Prompt: "a", PermissionHandler: "file:"}}, err: "--permission-handler supports file:<path> only"},
		{name: "bad timeout", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, Timeout: "soon"}, err: `--timeout "soon": want seconds (600) or a Go duration (10m)`},
		{name: "negative seconds", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, Timeout: "-5"}, err: `--timeout "-5"`},
		{name: "prompt only", f: SpawnFlags{P: SpawnParams{Prompt: "a"}}, want: SpawnParams{Prompt: "a"}},
		{name: "seconds", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, Timeout: "600"}, want: SpawnParams{Prompt: "a", Timeout: 600}},
		{name: "duration", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, Timeout: "10m"}, want: SpawnParams{Prompt: "a", Timeout: "10m"}},
		{name: "retries 0 given", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, MaxRetriesGiven: true}, want: SpawnParams{Prompt: "a", MaxRetries: Int(0)}},
		{name: "retries not given", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, MaxRetries: 3}, want: SpawnParams{Prompt: "a"}},
		{name: "auto approve", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, AutoApprove: true}, want: SpawnParams{Prompt: "a", AutoApprove: Bool(true)}},
		{name: "paths", f: SpawnFlags{P: SpawnParams{LoopFile: "l.toml", Dir: "d", PermissionHandler: "file:p"}},
			want: SpawnParams{LoopFile: abs("l.toml"), Dir: abs("d"), PermissionHandler: "file:" + abs("p")}},
		{name: "launch context", f: SpawnFlags{P: SpawnParams{Prompt: "a", PermissionMode: "plan", AppendSystemPrompt: "@rules.md", MCPConfig: "mcp.json"}, AllowedTools: "Read,Grep", AllowedToolsGiven: true},
			want: SpawnParams{Prompt: "a", PermissionMode: "plan", AppendSystemPrompt: "@" + abs("rules.md"), MCPConfig: abs("mcp.json"), AllowedTools: "Read,Grep"}},
		{name: "no tool at all", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, AllowedToolsGiven: true}, want: SpawnParams{Prompt: "a", AllowedTools: ""}},
		{name: "tools not given", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, AllowedTools: "Read"}, want: SpawnParams{Prompt: "a"}},
		{name: "watchdog", f: SpawnFlags{P: SpawnParams{Prompt: "a", Watchdog: "restart"}, ProgressTimeout: "90", ToolTimeout: "5m", WatchdogRestarts: 3, WatchdogRestartsGiven: true},
			want: SpawnParams{Prompt: "a", Watchdog: "restart", ProgressTimeout: 90, ToolTimeout: "5m", WatchdogRestarts: Int(3)}},
		{name: "bad tool timeout", f: SpawnFlags{P: SpawnParams{Prompt: "a"}, ToolTimeout: "soon"}, err: `--tool-timeout "soon": want seconds (600) or a Go duration (10m)`},
		{name: "prompt text kept", f: SpawnFlags{P: SpawnParams{Prompt: "a", AppendSystemPrompt: "be terse"}}, want: SpawnParams{Prompt: "a", AppendSystemPrompt: "be terse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Params()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Params() error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Params() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
