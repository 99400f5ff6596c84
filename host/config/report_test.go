package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestShow: the report names the files a run in the directory reads and
// where each setting came from, the flags over the project over the user.
func TestShow(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("xdg/avenor/config.toml", "backend = \"echo\"\nmax_retries = 3\n")
	write("proj/.avenor/config.toml", "max_retries = 4\n")
	env := map[string]string{"HOME": root, "XDG_CONFIG_HOME": filepath.Join(root, "xdg")}
	getenv := func(k string) string { return env[k] }
	rep, err := Show(getenv, []string{}, filepath.Join(root, "proj"), map[string]any{"model": "m1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.UserFound || rep.UserFile != filepath.Join(root, "xdg/avenor/config.toml") ||
		rep.Project != filepath.Join(root, "proj") || rep.ProjectFile != filepath.Join(root, "proj/.avenor/config.toml") {
		t.Errorf("files: %+v", rep)
	}
	want := map[string]string{"backend": rep.UserFile, "max_retries": rep.ProjectFile, "model": "flag --model"}
	for _, e := range rep.Settings {
		if w, ok := want[e.Key]; ok {
			if e.Source != w {
				t.Errorf("%s from %q, want %q", e.Key, e.Source, w)
			}
			delete(want, e.Key)
		}
	}
	if len(want) != 0 {
		t.Errorf("settings missing: %v", want)
	}
}

// TestExplainHasEveryValue: every key the report lists has a value (config
// show printed <nil> for a key Explain forgot).
func TestExplainHasEveryValue(t *testing.T) {
	for _, e := range Explain(Defaults(), Provenance{}, Sources{}) {
		if e.Value == nil {
			t.Errorf("%s has no value", e.Key)
		}
	}
}
