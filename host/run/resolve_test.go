package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/plugins"
)

// resolveWorld is a project dir under a temp home with its own XDG dirs.
func resolveWorld(t *testing.T, projectConfig, lock string) (Env, string) {
	t.Helper()
	root := t.TempDir()
	project := filepath.Join(root, "proj")
	if err := os.MkdirAll(filepath.Join(project, ".avenor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if projectConfig != "" {
		if err := os.WriteFile(filepath.Join(project, ".avenor", "config.toml"), []byte(projectConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if lock != "" {
		if err := os.WriteFile(filepath.Join(project, ".avenor", plugins.LockFileName), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"HOME": root, "XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_DATA_HOME": filepath.Join(root, "data"), "XDG_STATE_HOME": filepath.Join(root, "state"),
		"AVENOR_PLUGIN_PATH": filepath.Join(root, "none"), "PATH": filepath.Join(root, "none")}
	return Env{Getenv: func(k string) string { return vars[k] }}, project
}

// Resolve is where every command gets its finder: the config's family
// mapping and the project's lock are in it.
func TestResolveMapsFamiliesAndReadsTheLock(t *testing.T) {
	env, project := resolveWorld(t, "[backends.fast]\nplugin = \"echo\"\n", "")
	r, err := Resolve(env, filepath.Join(project), map[string]any{"backend": "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Project != project || r.Settings.Backend != "fast" || r.Finder.Family("fast") != "echo" {
		t.Fatalf("project %q backend %q family %q", r.Project, r.Settings.Backend, r.Finder.Family("fast"))
	}
	_, err = r.Backend("fast")
	var nf *plugins.NotFoundError
	if !errors.As(err, &nf) || !strings.HasPrefix(err.Error(), `unknown backend "fast"`) || nf.Family != "echo" {
		t.Fatalf("Backend(fast) = %v; want run's unknown-backend message for family echo", err)
	}

	env, project = resolveWorld(t, "", "this is not a lock file")
	if _, err := Resolve(env, project, nil); err == nil {
		t.Fatal("a lock file that does not read resolved: a pinned project would run unpinned")
	}
}
