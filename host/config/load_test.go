package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fixture builds Sources with a user and a project file in temp directories.
type fixture struct {
	user, project string // TOML bodies; "" writes no file
	environ       []string
	flags         map[string]any
}

func (f fixture) sources(t *testing.T) (Sources, string, string) {
	t.Helper()
	root := t.TempDir()
	dirs := Dirs{
		Config: filepath.Join(root, "config", "avenor"),
		Data:   filepath.Join(root, "data", "avenor"),
		State:  filepath.Join(root, "state", "avenor"),
	}
	project := filepath.Join(root, "proj")
	if err := os.MkdirAll(filepath.Join(project, ProjectMarker), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, body string) {
		if body == "" {
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(dirs.UserConfigFile(), f.user)
	write(ProjectConfigFile(project), f.project)
	return Sources{Environ: f.environ, Dirs: dirs, ProjectDir: project, Flags: f.flags},
		dirs.UserConfigFile(), ProjectConfigFile(project)
}

func TestLoadLayerOverrides(t *testing.T) {
	// For each key, the value each layer sets; the case "up to layer N" sets
	// the key in every layer up to N, so N must win over all below it.
	type perLayer struct {
		file    [2]string // TOML value literal for the user and project files
		env     string
		flag    any
		results [5]any // the winning value with layers up to default..flag set
	}
	keys := map[string]perLayer{
		"backend": {
			file:    [2]string{`"pi"`, `"claude"`},
			env:     "codex-app-server",
			flag:    "gemini-acp",
			results: [5]any{"opencode-acp", "pi", "claude", "codex-app-server", "gemini-acp"},
		},
		"timeout": {
			file:    [2]string{`"1m"`, `"90s"`},
			env:     "3m",
			flag:    4 * time.Minute,
			results: [5]any{time.Duration(0), time.Minute, 90 * time.Second, 3 * time.Minute, 4 * time.Minute},
		},
		"max_retries": {
			file:    [2]string{`1`, `2`},
			env:     "3",
			flag:    4,
			results: [5]any{0, 1, 2, 3, 4},
		},
	}
	layers := []Layer{LayerDefault, LayerUser, LayerProject, LayerEnv, LayerFlag}
	for _, key := range []string{"backend", "timeout", "max_retries"} {
		vals := keys[key]
		for top, layer := range layers {
			t.Run(key+"/"+string(layer), func(t *testing.T) {
				var f fixture
				if top >= 1 {
					f.user = key + " = " + vals.file[0] + "\n"
				}
				if top >= 2 {
					f.project = key + " = " + vals.file[1] + "\n"
				}
				if top >= 3 {
					f.environ = []string{envName(key) + "=" + vals.env}
				}
				if top >= 4 {
					f.flags = map[string]any{key: vals.flag}
				}
				src, _, _ := f.sources(t)
				s, prov, err := Load(src)
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				got := map[string]any{"backend": s.Backend, "timeout": s.Timeout, "max_retries": s.MaxRetries}[key]
				if want := vals.results[top]; got != want {
					t.Errorf("%s = %v, want %v", key, got, want)
				}
				if prov[key] != layer {
					t.Errorf("provenance[%s] = %q, want %q", key, prov[key], layer)
				}
			})
		}
	}
}

func TestLoadDefaults(t *testing.T) {
	s, prov, err := Load(Sources{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, Defaults()) {
		t.Errorf("Load(Sources{}) = %+v, want Defaults() %+v", s, Defaults())
	}
	for _, k := range Keys() {
		if k.Key == "backends" {
			continue
		}
		if prov[k.Key] != LayerDefault {
			t.Errorf("provenance[%s] = %q, want default", k.Key, prov[k.Key])
		}
	}
}

func TestLoadAllKeys(t *testing.T) {
	src, _, _ := fixture{
		project: `
backend = "pi"
model = "m1"
agent = "build"
thinking = "high"
dir = "sub"
timeout = "10m"
progress_timeout = "90s"
tool_timeout = "5m"
watchdog = "cancel"
max_retries = 2
permission_claim_timeout = "30s"
auto_approve = true
server_url = "http://127.0.0.1:4096"
label = "nightly"
`,
		environ: []string{"AVENOR_AUTO_APPROVE=false", "AVENOR_LABEL=from-env", "AVENOR_THINKING="},
		flags:   map[string]any{"model": "m2", "progress_timeout": "2m", "watchdog_restarts": "3"},
	}.sources(t)
	s, prov, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Backend: "pi", Model: "m2", Agent: "build", Thinking: "high", Dir: "sub",
		Timeout: 10 * time.Minute, ProgressTimeout: 2 * time.Minute, MaxRetries: 2,
		ToolTimeout: 5 * time.Minute, Watchdog: "cancel", WatchdogRestarts: 3, MaxRateLimitResumes: 5,
		PermissionClaimTimeout: 30 * time.Second, AutoApprove: false,
		ServerURL: "http://127.0.0.1:4096", Label: "from-env", Linger: 60 * time.Second,
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	wantProv := map[string]Layer{"model": LayerFlag, "auto_approve": LayerEnv, "thinking": LayerProject, "agent": LayerProject}
	for k, l := range wantProv {
		if prov[k] != l {
			t.Errorf("provenance[%s] = %q, want %q", k, prov[k], l)
		}
	}
}

func TestLoadEnvAllowList(t *testing.T) {
	// Other AVENOR_* variables mean other things and must be ignored, even
	// when their values would not parse as any setting.
	environ := []string{
		"AVENOR_PLUGIN_PATH=/opt/plugins",
		"AVENOR_CONTROL_READY_FD=3",
		"AVENOR_CONTROL_IDENTITY_TOKEN=secret",
		"AVENOR_TREE_BUDGET=lots",
		"AVENOR_CLAUDE_TERMINAL=1",
		"AVENOR_OPENCODE_URL=http://elsewhere",
		"AVENOR_BACKENDS=x",
		"AVENOR_BACKENDS_PI_PLUGIN=x",
		"AVENOR_TIMEOUTS=never",
		"TIMEOUT=soon",
		"AVENOR_MODEL=env-model",
	}
	s, prov, err := Load(Sources{Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	want := Defaults()
	want.Model = "env-model"
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v, want %+v", s, want)
	}
	if prov["server_url"] != LayerDefault {
		t.Errorf("AVENOR_OPENCODE_URL set server_url (provenance %q)", prov["server_url"])
	}
}

func TestLoadEnvLookup(t *testing.T) {
	vars := map[string]string{"AVENOR_MAX_RETRIES": "5", "AVENOR_AUTO_APPROVE": "1", "AVENOR_PLUGIN_PATH": "/x"}
	var asked []string
	lookup := func(name string) string { asked = append(asked, name); return vars[name] }
	s, prov, err := Load(Sources{Env: lookup})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxRetries != 5 || !s.AutoApprove || prov["max_retries"] != LayerEnv {
		t.Errorf("got %+v, provenance %v", s, prov)
	}
	for _, name := range asked {
		if name == "AVENOR_PLUGIN_PATH" || !strings.HasPrefix(name, "AVENOR_") {
			t.Errorf("Load looked up %s", name)
		}
	}
	// Environ, when given, wins over Env.
	s, _, err = Load(Sources{Env: lookup, Environ: []string{"AVENOR_MAX_RETRIES=7"}})
	if err != nil || s.MaxRetries != 7 || s.AutoApprove {
		t.Errorf("with Environ: %+v, %v", s, err)
	}
}

func TestLoadBackends(t *testing.T) {
	src, _, _ := fixture{
		user: `
[backends.pi]
plugin = "pi"
env = { OPENAI_API_KEY = "user-key", SHARED = "user" }
options = { permission_gate = true, depth = 2 }

[backends.my-claude]
plugin = "claude"
`,
		project: `
backend = "fast"

[backends.pi.env]
SHARED = "project"

[backends.pi.options]
permission_gate = false
nested = { a = [1, 2], b = "c" }

[backends.fast]
plugin = "opencode"
options = { model_list = ["a", "b"] }
`,
	}.sources(t)
	s, prov, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]BackendConfig{
		"pi": {
			Plugin: "pi",
			Env:    map[string]string{"OPENAI_API_KEY": "user-key", "SHARED": "project"},
			Options: map[string]any{
				"permission_gate": false,
				"depth":           int64(2),
				"nested":          map[string]any{"a": []any{int64(1), int64(2)}, "b": "c"},
			},
		},
		"my-claude": {Plugin: "claude"},
		"fast":      {Plugin: "opencode", Options: map[string]any{"model_list": []any{"a", "b"}}},
	}
	if !reflect.DeepEqual(s.Backends, want) {
		t.Errorf("backends\n got %#v\nwant %#v", s.Backends, want)
	}
	for key, layer := range map[string]Layer{
		"backends.pi.plugin":                  LayerUser,
		"backends.pi.env.OPENAI_API_KEY":      LayerUser,
		"backends.pi.env.SHARED":              LayerProject,
		"backends.pi.options.permission_gate": LayerProject,
		"backends.pi.options.depth":           LayerUser,
		"backends.fast.plugin":                LayerProject,
	} {
		if prov[key] != layer {
			t.Errorf("provenance[%s] = %q, want %q", key, prov[key], layer)
		}
	}
	if out := fmt.Sprintf("%v %+v %#v", s, s, s.Backends); strings.Contains(out, "user-key") {
		t.Errorf("printing settings leaks an env value: %s", out)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name     string
		fix      fixture
		sentinel error
		want     []string // substrings; "{user}" and "{project}" expand to the file paths
	}{
		{
			name:     "bad duration in project file",
			fix:      fixture{project: `timeout = "soon"`},
			sentinel: ErrInvalidValue,
			want:     []string{`config {project}: timeout: invalid duration "soon"`},
		},
		{
			name:     "duration as bare number",
			fix:      fixture{user: `progress_timeout = 90`},
			sentinel: ErrInvalidValue,
			want:     []string{`config {user}: progress_timeout: invalid duration 90`, `"90s"`},
		},
		{
			name:     "negative duration",
			fix:      fixture{user: `timeout = "-5s"`},
			sentinel: ErrInvalidValue,
			want:     []string{`timeout: invalid duration "-5s": must not be negative`},
		},
		{
			name:     "bad int in file",
			fix:      fixture{project: `max_retries = 1.5`},
			sentinel: ErrInvalidValue,
			want:     []string{`config {project}: max_retries: invalid integer: want a whole number, got a float`},
		},
		{
			name:     "negative int",
			fix:      fixture{project: `max_retries = -1`},
			sentinel: ErrInvalidValue,
			want:     []string{`max_retries: invalid integer -1: must not be negative`},
		},
		{
			name:     "string key given a number",
			fix:      fixture{user: `backend = 3`},
			sentinel: ErrInvalidValue,
			want:     []string{`config {user}: backend: want a string, got an integer`},
		},
		{
			name:     "bad int in env",
			fix:      fixture{environ: []string{"AVENOR_MAX_RETRIES=three"}},
			sentinel: ErrInvalidValue,
			want:     []string{`environment AVENOR_MAX_RETRIES: invalid integer "three"`},
		},
		{
			name:     "bad duration in env",
			fix:      fixture{environ: []string{"AVENOR_PERMISSION_CLAIM_TIMEOUT=30"}},
			sentinel: ErrInvalidValue,
			want:     []string{`environment AVENOR_PERMISSION_CLAIM_TIMEOUT: invalid duration "30"`},
		},
		{
			name:     "bad bool in env",
			fix:      fixture{environ: []string{"AVENOR_AUTO_APPROVE=yes"}},
			sentinel: ErrInvalidValue,
			want:     []string{`environment AVENOR_AUTO_APPROVE: invalid boolean "yes"`},
		},
		{
			name:     "bad flag value",
			fix:      fixture{flags: map[string]any{"timeout": "later"}},
			sentinel: ErrInvalidValue,
			want:     []string{`flag --timeout: invalid duration "later"`},
		},
		{
			name:     "unknown flag key",
			fix:      fixture{flags: map[string]any{"prompt": "hi"}},
			sentinel: ErrUnknownKey,
			want:     []string{`flag --prompt: unknown key`},
		},
		{
			name:     "backends from a flag",
			fix:      fixture{flags: map[string]any{"backends": map[string]any{}}},
			sentinel: ErrUnknownKey,
			want:     []string{`flag --backends: unknown key`},
		},
		{
			name:     "unknown key typo",
			fix:      fixture{project: "timout = \"5s\"\n"},
			sentinel: ErrUnknownKey,
			want:     []string{`config {project}: timout: unknown key (did you mean "timeout"?)`},
		},
		{
			name:     "unknown key far from any",
			fix:      fixture{user: "[server]\nport = 1\n"},
			sentinel: ErrUnknownKey,
			want:     []string{`config {user}: server: unknown key (known keys: agent, allowed_tools, append_system_prompt, auto_approve, auto_compact_pct, backend, backends,`},
		},
		{
			name:     "malformed TOML",
			fix:      fixture{user: "backend = \"pi\nmodel = 3\n"},
			sentinel: ErrMalformedFile,
			want:     []string{`config {user}: malformed TOML at line 1`},
		},
		{
			name:     "backends not a table",
			fix:      fixture{project: `backends = "pi"`},
			sentinel: ErrInvalidValue,
			want:     []string{`config {project}: backends: want a table`},
		},
		{
			name:     "unknown backend field",
			fix:      fixture{project: "[backends.pi]\nplugn = \"pi\"\n"},
			sentinel: ErrUnknownKey,
			want:     []string{`config {project}: backends.pi.plugn: unknown key (did you mean "plugin"?)`},
		},
		{
			name:     "backend env value not a string",
			fix:      fixture{project: "[backends.pi.env]\nAPI_KEY = 12345\n"},
			sentinel: ErrInvalidValue,
			want:     []string{`config {project}: backends.pi.env.API_KEY: want a string, got an integer`},
		},
		{
			name:     "dotted backend name",
			fix:      fixture{project: "[backends.\"a.b\"]\nplugin = \"pi\"\n"},
			sentinel: ErrInvalidValue,
			want:     []string{`backend name "a.b" must be non-empty and must not contain "."`},
		},
		{
			name:     "several problems reported together",
			fix:      fixture{user: "timeout = \"x\"\nlabl = \"y\"\n", environ: []string{"AVENOR_TIMEOUT=z"}},
			sentinel: ErrUnknownKey,
			want:     []string{`config {user}: timeout: invalid duration "x"`, `config {user}: labl: unknown key`, `environment AVENOR_TIMEOUT: invalid duration "z"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, user, project := tt.fix.sources(t)
			s, prov, err := Load(src)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", s)
			}
			if prov != nil || !reflect.DeepEqual(s, Settings{}) {
				t.Errorf("on error got settings %+v, provenance %v; want zero values", s, prov)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("error %q does not match %v", err, tt.sentinel)
			}
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Errorf("error %q is not a *config.Error", err)
			}
			for _, w := range tt.want {
				w = strings.NewReplacer("{user}", user, "{project}", project).Replace(w)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", err, w)
				}
			}
			if strings.Contains(err.Error(), "12345") {
				t.Errorf("error quotes a backend env value: %s", err)
			}
		})
	}
}

func TestLoadMissingFilesAreFine(t *testing.T) {
	root := t.TempDir()
	s, _, err := Load(Sources{
		Dirs:       Dirs{Config: filepath.Join(root, "nope")},
		ProjectDir: filepath.Join(root, "also-nope"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, Defaults()) {
		t.Errorf("got %+v", s)
	}
}

func TestLoadUnreadableFile(t *testing.T) {
	// A config path that is a directory is an error, not a missing file.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "config.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(Sources{Dirs: Dirs{Config: root}})
	if err == nil || !strings.Contains(err.Error(), "config "+filepath.Join(root, "config.toml")) {
		t.Errorf("err = %v", err)
	}
}
