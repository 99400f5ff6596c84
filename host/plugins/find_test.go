package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeExe(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFamily(t *testing.T) {
	f := Finder{Families: map[string]string{"mine": "echo"}}
	for backend, want := range map[string]string{
		"opencode-http": "opencode", "codex-app-server": "codex", "pi": "pi", "claude-channel": "claude", "mine": "echo",
	} {
		if got := f.Family(backend); got != want {
			t.Errorf("Family(%q) = %q, want %q", backend, got, want)
		}
	}
}

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	pp, inst, exe, path := filepath.Join(root, "pp"), filepath.Join(root, "inst"), filepath.Join(root, "exe"), filepath.Join(root, "path")
	f := Finder{PluginPath: []string{pp}, InstallDir: inst, ExeDir: exe, PATH: []string{path}}

	writeExe(t, filepath.Join(path, "avenor-plugin-echo"))
	assertFound(t, f, SourcePATH, "")
	writeExe(t, filepath.Join(exe, "avenor-plugin-echo"))
	assertFound(t, f, SourceExeDir, "")
	writeExe(t, filepath.Join(inst, "echo", "1.9.0", "avenor-plugin-echo"))
	writeExe(t, filepath.Join(inst, "echo", "1.10.0", "avenor-plugin-echo"))
	assertFound(t, f, SourceInstalled, "1.10.0")
	writeExe(t, filepath.Join(pp, "avenor-plugin-echo"))
	assertFound(t, f, SourcePluginPath, "")

	if all := f.All(); len(all) != 1 || all[0].Source != SourcePluginPath {
		t.Fatalf("All = %+v", all)
	}
}

func assertFound(t *testing.T, f Finder, source, version string) {
	t.Helper()
	got, err := f.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != source || got.Version != version || got.Family != "echo" {
		t.Fatalf("Find = %+v, want source %s version %q", got, source, version)
	}
}

func TestNotFoundSaysWhereItLooked(t *testing.T) {
	f := Finder{InstallDir: "/nowhere/plugins", ExeDir: "/nowhere/bin"}
	_, err := f.Find("opencode-acp")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"avenor-plugin-opencode", "AVENOR_PLUGIN_PATH (unset)", "/nowhere/plugins/opencode/<version>", "/nowhere/bin (next to avenor)", "PATH", "avenor plugin install"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%s", want, err)
		}
	}
}

func TestInvalidFamilyNeverBecomesAPath(t *testing.T) {
	if _, err := (Finder{PATH: []string{"/bin"}}).Find("../sh"); err == nil {
		t.Fatal("a backend name with a path separator must not resolve")
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0}, {"1.9.0", "1.10.0", -1}, {"v2.0.0", "1.99.0", 1}, {"1.0", "1.0.1", -1}, {"1.0.0-rc1", "1.0.0-rc2", -1},
	} {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q,%q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestInstallRefusesANonPlugin(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "avenor-plugin-fake")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Install(context.Background(), fake, filepath.Join(dir, "plugins"))
	if err == nil || !strings.Contains(err.Error(), "is not a working avenor plugin") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "plugins")); !os.IsNotExist(err) {
		t.Fatalf("nothing may be installed from a refused binary: %v", err)
	}
}
