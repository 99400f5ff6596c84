package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// prepareWorld is resolveWorld with an executable avenor-plugin-echo on
// AVENOR_PLUGIN_PATH, so that backend echo resolves (nothing launches it).
func prepareWorld(t *testing.T) (Env, string) {
	t.Helper()
	env, project := resolveWorld(t, "", "")
	dir := env.Getenv("AVENOR_PLUGIN_PATH")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "avenor-plugin-echo"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return env, project
}

// TestPrepareRefusals: Prepare refuses a command line in the contract's
// validation order (docs/run.md#validation), naming the flags.
func TestPrepareRefusals(t *testing.T) {
	env, project := prepareWorld(t)
	echo := map[string]any{"backend": "echo"}
	for _, c := range []struct {
		name string
		req  Request
		want string
	}{
		{"unknown backend first", Request{Settings: map[string]any{"backend": "nope"}, Prompt: "x", PromptFile: "y"}, `unknown backend "nope"`},
		{"roster entry without file", Request{Settings: echo, RosterEntry: "r"}, "--roster-entry requires --roster-file"},
		{"roster entry and backend", Request{Settings: echo, RosterFile: "r.json", RosterEntry: "e"}, "--roster-entry and --backend are mutually exclusive"},
		{"a good one", Request{Settings: echo, Prompt: "x"}, ""},
		{"prompt and prompt file", Request{Settings: echo, Prompt: "x", PromptFile: "y"}, "--prompt and --prompt-file are mutually exclusive"},
		{"loop and team", Request{Settings: echo, LoopFile: "l", TeamFile: "t"}, "--loop-file and --team-file are mutually exclusive"},
		{"loop and resume", Request{Settings: echo, LoopFile: "l", Resume: "s"}, "--loop-file and --resume are mutually exclusive"},
		{"no prompt", Request{Settings: echo}, "--prompt, --prompt-file, --loop-file, or --team-file is required"},
		{"token file without adapter", Request{Settings: echo, Prompt: "x", HTTPDebugTokenFile: "t"}, "--http-debug-token-file needs --http-debug"},
		{"stdin without reader", Request{Settings: echo, PromptFile: "-"}, "--prompt-file -: no stdin"},
		{"bad on-permission", Request{Settings: echo, Prompt: "x", OnPermission: "maybe"}, "maybe"},
	} {
		c.req.Start = project
		_, err := Prepare(env, c.req)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want it prepared", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v; want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestPrepareOptions: the layered settings and the request become the
// runner's options; the permission base is derived from the sentinel.
func TestPrepareOptions(t *testing.T) {
	env, project := prepareWorld(t)
	sent := filepath.Join(project, "run.done")
	p, err := Prepare(env, Request{Start: project, Settings: map[string]any{"backend": "echo", "max_retries": 2, "label": "l", "dir": project},
		Prompt: "hello", RunID: "r1", SentinelFile: sent, Stdin: strings.NewReader("")})
	if err != nil {
		t.Fatal(err)
	}
	o := p.Spec.Options
	if !o.DirExplicit || o.Backend != "echo" || o.Prompt != "hello" || o.RunID != "r1" || o.Label != "l" || o.MaxRetries != 2 || o.Dir != project ||
		o.SentinelPath != sent || o.PermBase != filepath.Join(project, "run.perm") {
		t.Errorf("options %+v", o)
	}
	if p.Spec.Permissions.FileBase != filepath.Join(project, "run.perm") {
		t.Errorf("permission file base %q", p.Spec.Permissions.FileBase)
	}
	if wf, err := p.Phased(); wf != nil || err != nil {
		t.Errorf("a one-shot run is not phased: %v %v", wf, err)
	}
}
