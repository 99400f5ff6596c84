package occonfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestStripJSONC(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": 1, // one
"b": "http://x//y", /* two */ "c": [1,2,],}`, `{"a":1,"b":"http://x//y","c":[1,2]}`},
		{`{"s": "a \" // not a comment", "t": "/* nor this */"}`, `{"s":"a \" // not a comment","t":"/* nor this */"}`},
		{"{\"a\": {\"b\": 1,\n// c\n},\n}", `{"a":{"b":1}}`},
	}
	for _, tc := range cases {
		var v any
		if err := json.Unmarshal(StripJSONC([]byte(tc.in)), &v); err != nil {
			t.Errorf("%s: %v (%s)", tc.in, err, StripJSONC([]byte(tc.in)))
			continue
		}
		got, _ := json.Marshal(v)
		var w any
		_ = json.Unmarshal([]byte(tc.want), &w)
		want, _ := json.Marshal(w)
		if string(got) != string(want) {
			t.Errorf("%s: got %s want %s", tc.in, got, want)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The layers in OpenCode's order: global < OPENCODE_CONFIG < project (root
// down to dir) < .opencode < OPENCODE_CONFIG_DIR < inline; the last that
// sets a field wins.
func TestResolveAgentPrecedence(t *testing.T) {
	tmp := t.TempDir()
	root := filepath.Join(tmp, "repo")
	dir := filepath.Join(root, "sub", "pkg")
	write(t, filepath.Join(root, ".git", "HEAD"), "ref")
	write(t, filepath.Join(tmp, "xdg", "opencode", "opencode.json"), `{"agent":{"a":{"model":"g/global","mode":"subagent"},"b":{"model":"g/b"},"c":{"model":"g/c"},"d":{"model":"g/d"},"e":{"model":"g/e"}}}`)
	write(t, filepath.Join(tmp, "custom.json"), `{"agent":{"b":{"model":"custom/b"},"c":{"model":"custom/c"}}}`)
	write(t, filepath.Join(root, "opencode.jsonc"), `{ // root
	  "agent":{"c":{"model":"root/c"},"d":{"model":"root/d"},},}`)
	write(t, filepath.Join(root, "sub", "pkg", "opencode.json"), `{"agent":{"d":{"model":"pkg/d"}}}`)
	write(t, filepath.Join(root, ".opencode", "agent", "e.md"), "---\ndescription: e\nmodel: md/e\nmode: primary\ntools:\n  bash: false\n---\nYou are e.\n")
	write(t, filepath.Join(tmp, "cfgdir", "opencode.json"), `{"agent":{"f":{"model":"dir/f"}}}`)
	env := map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(tmp, "xdg"), "OPENCODE_CONFIG": filepath.Join(tmp, "custom.json"),
		"OPENCODE_CONFIG_DIR": filepath.Join(tmp, "cfgdir"), "OPENCODE_CONFIG_CONTENT": `{"agent":{"g":{"model":"{env:MODEL}"}}}`,
		"MODEL": "inline/g",
	}
	getenv := func(k string) string { return env[k] }
	layers, err := Layers(dir, getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "g/global", "b": "custom/b", "c": "root/c", "d": "pkg/d", "e": "md/e", "f": "dir/f", "g": "inline/g", "zz": ""}
	for name, model := range want {
		if got := ResolveAgent(layers, name, getenv); got.Model != model {
			t.Errorf("agent %s: model %q from %v; want %q", name, got.Model, got.Sources, model)
		}
	}
	if a := ResolveAgent(layers, "a", getenv); a.Mode != "subagent" {
		t.Errorf("mode %q", a.Mode)
	}
	if e := ResolveAgent(layers, "e", getenv); e.Mode != "primary" {
		t.Errorf("md mode %q", e.Mode)
	}
	env["OPENCODE_CONFIG_CONTENT"] = "{not json"
	if _, err := Layers(dir, getenv); err == nil || !strings.Contains(err.Error(), "OPENCODE_CONFIG_CONTENT") {
		t.Errorf("bad inline config: %v", err)
	}
}

func TestGlobalDirFallsBackToHome(t *testing.T) {
	if got := GlobalDir(func(k string) string { return map[string]string{"HOME": "/h"}[k] }); got != "/h/.config/opencode" {
		t.Errorf("%s", got)
	}
}

func TestWriteRunConfig(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	write(t, filepath.Join(tmp, "custom.json"), `{"model":"a/b","agent":{"rev":{"mode":"subagent","model":"x/y"}}}`)
	env := map[string]string{"OPENCODE_CONFIG": filepath.Join(tmp, "custom.json"), "OPENCODE_CONFIG_CONTENT": `{"agent":{"rev":{"mode":"subagent"}},"share":"disabled"}`}
	rc, err := WriteRunConfig("r1", "rev", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Match(filepath.Join(tmp, "avenor-opencode-acp-r1-*.json"), rc.Path); !m {
		t.Errorf("path %s", rc.Path)
	}
	if st, err := os.Lstat(rc.Path); err != nil || st.Mode() != 0o600 {
		t.Errorf("%s: mode %v %v, want a regular 0600 file", rc.Path, st.Mode(), err)
	}
	data, _ := os.ReadFile(rc.Path)
	var got map[string]any
	_ = json.Unmarshal(data, &got)
	rev := got["agent"].(map[string]any)["rev"].(map[string]any)
	if got["model"] != "a/b" || got["share"] != "disabled" || rev["mode"] != "all" || rev["model"] != "x/y" {
		t.Errorf("per-run config %s", data)
	}
	var inline map[string]any
	_ = json.Unmarshal([]byte(rc.Content), &inline)
	if inline["agent"].(map[string]any)["rev"].(map[string]any)["mode"] != "all" || inline["share"] != "disabled" {
		t.Errorf("inline %s", rc.Content)
	}
}

// TestWriteRunConfigPredictableName: with a fixed run id, another user who
// made $TMPDIR/avenor-opencode-acp-<run id>.json first (readable by them) does
// not get the config, which may hold provider API keys: it goes to a new
// 0600 file of this user at a name nobody could guess.
func TestWriteRunConfigPredictableName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes a file owned by another uid")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	squat := filepath.Join(tmp, "avenor-opencode-acp-fixed.json")
	write(t, squat, "")
	if err := os.Chmod(squat, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(squat, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENCODE_CONFIG_CONTENT": `{"provider":{"p":{"options":{"apiKey":"sk-secret"}}}}`}
	var paths []string
	for range 2 {
		rc, err := WriteRunConfig("fixed", "rev", func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(rc.Path)
		paths = append(paths, rc.Path)
		var st syscall.Stat_t
		if err := syscall.Lstat(rc.Path, &st); err != nil || st.Uid != uint32(os.Geteuid()) || st.Mode&0o777 != 0o600 {
			t.Errorf("%s: uid %d mode %o (%v), want this user's 0600 file", rc.Path, st.Uid, st.Mode&0o777, err)
		}
	}
	if b, _ := os.ReadFile(squat); len(b) != 0 {
		t.Errorf("the other user's file got the config: %s", b)
	}
	if paths[0] == paths[1] || paths[0] == squat {
		t.Errorf("config paths %v are predictable", paths)
	}
}
