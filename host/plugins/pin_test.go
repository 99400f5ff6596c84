package plugins

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pinWorld is an install directory with echo 1.0.0 and 1.1.0, a project,
// and an echo on AVENOR_PLUGIN_PATH that a pin must beat.
type pinWorld struct {
	f       Finder
	project string
	install string
}

func newPinWorld(t *testing.T) pinWorld {
	t.Helper()
	root := t.TempDir()
	w := pinWorld{project: filepath.Join(root, "project"), install: filepath.Join(root, "plugins")}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		writeScript(t, filepath.Join(w.install, "echo", v, "avenor-plugin-echo"), "echo "+v)
	}
	pp := filepath.Join(root, "dev")
	writeExe(t, filepath.Join(pp, "avenor-plugin-echo"))
	w.f = Finder{PluginPath: []string{pp}, InstallDir: w.install, Lock: &Lock{Project: w.project}}
	return w
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n# "+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (w pinWorld) pin(t *testing.T, version string) Pin {
	t.Helper()
	p, err := PinInstalled(w.f.Lock, w.install, "echo", version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPinComesFirst(t *testing.T) {
	w := newPinWorld(t)
	p := w.pin(t, "1.0.0")
	got, err := w.f.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != SourcePinned || got.Version != "1.0.0" || got.Pin == nil || got.Pin.Hash != p.Hash ||
		got.Path != filepath.Join(w.install, "echo", "1.0.0", "avenor-plugin-echo") {
		t.Fatalf("Find = %+v, want the pinned 1.0.0", got)
	}
	// Unpinned, AVENOR_PLUGIN_PATH wins again; without it the highest version.
	w.f.Lock.Remove("echo")
	if got, _ := w.f.Find("echo"); got.Source != SourcePluginPath {
		t.Fatalf("unpinned Find = %+v", got)
	}
	w.f.PluginPath = nil
	if got, _ := w.f.Find("echo"); got.Source != SourceInstalled || got.Version != "1.1.0" {
		t.Fatalf("unpinned Find = %+v, want the highest installed", got)
	}
}

func TestPinHighestWhenNoVersionIsGiven(t *testing.T) {
	w := newPinWorld(t)
	if p := w.pin(t, ""); p.Version != "1.1.0" {
		t.Fatalf("pinned %+v, want the highest installed version", p)
	}
}

// TestBrokenPinNeverFallsBack: a missing or changed pinned binary is an
// error naming the pin and the fix, even though other echo binaries exist.
func TestBrokenPinNeverFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(w pinWorld)
		is      error
		wants   []string
	}{
		{"missing version", func(w pinWorld) { os.RemoveAll(filepath.Join(w.install, "echo", "1.0.0")) }, ErrPinMissing, []string{
			"plugin echo 1.0.0 is pinned in", "plugins.lock", "does not exist", "will not fall back",
			"avenor plugin install <path-to-avenor-plugin-echo>", "avenor plugin use echo@<version>` (installed: 1.1.0)", "avenor plugin unpin echo",
		}},
		{"changed binary", func(w pinWorld) {
			writeScript(t, filepath.Join(w.install, "echo", "1.0.0", "avenor-plugin-echo"), "tampered")
		}, ErrPinMismatch, []string{
			"plugin echo 1.0.0 at", "does not match its pin in", "pinned sha256:", "found sha256:", "will not run it",
			"avenor plugin install", "avenor plugin use echo@1.0.0",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newPinWorld(t)
			w.pin(t, "1.0.0")
			tc.breakIt(w)
			got, err := w.f.Find("echo")
			var pe *PinError
			if !errors.As(err, &pe) || !errors.Is(err, tc.is) {
				t.Fatalf("Find = %+v, %v; want a %v PinError", got, err, tc.is)
			}
			for _, want := range tc.wants {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestPinInstalledRefuses(t *testing.T) {
	w := newPinWorld(t)
	_, err := PinInstalled(w.f.Lock, w.install, "echo", "2.0.0")
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "installed: 1.0.0, 1.1.0") {
		t.Errorf("pinning a version not installed: %v", err)
	}
	_, err = PinInstalled(w.f.Lock, w.install, "codex", "")
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "avenor plugin install <path-to-avenor-plugin-codex>") {
		t.Errorf("pinning a family not installed: %v", err)
	}
	// The install recorded a hash; the binary changed since.
	bin := filepath.Join(w.install, "echo", "1.0.0", "avenor-plugin-echo")
	if err := os.WriteFile(bin+".sha256", []byte(hashA+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = PinInstalled(w.f.Lock, w.install, "echo", "1.0.0")
	if !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), "no longer matches the hash recorded when it was installed") {
		t.Errorf("pinning a changed install: %v", err)
	}
	if len(w.f.Lock.Pins) != 0 {
		t.Errorf("a refused pin was recorded: %+v", w.f.Lock.Pins)
	}
}

func TestParseFamilyVersion(t *testing.T) {
	for in, want := range map[string][2]string{"echo@1.0.0": {"echo", "1.0.0"}, "echo": {"echo", ""}, "open_code@2.0.0-rc.1+b5": {"open_code", "2.0.0-rc.1+b5"}} {
		f, v, err := ParseFamilyVersion(in)
		if err != nil || f != want[0] || v != want[1] {
			t.Errorf("ParseFamilyVersion(%q) = %q, %q, %v", in, f, v, err)
		}
	}
	for _, bad := range []string{"", "@1.0.0", "Echo@1", "echo@", "echo@../1", "../sh"} {
		if _, _, err := ParseFamilyVersion(bad); err == nil {
			t.Errorf("ParseFamilyVersion(%q) accepted", bad)
		}
	}
}

// TestLaunchChecksThePinBeforeExec: a pinned binary swapped after Find is
// refused at launch and never runs.
func TestLaunchChecksThePinBeforeExec(t *testing.T) {
	w := newPinWorld(t)
	w.pin(t, "1.0.0")
	found, err := w.f.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(found.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Launch(context.Background(), found, "echo", nil)
	var pe *PinError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPinMismatch) || !strings.Contains(err.Error(), "avenor plugin use echo@1.0.0") {
		t.Fatalf("Launch = %v, want a pin mismatch", err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the swapped binary ran")
	}
}

func TestStatusSaysWhichBinaryAndWhy(t *testing.T) {
	w := newPinWorld(t)
	w.f.PluginPath = nil
	writeExe(t, filepath.Join(w.install, "..", "path", "avenor-plugin-other"))
	w.f.PATH = []string{filepath.Join(w.install, "..", "path")}
	w.pin(t, "1.0.0")
	st := w.f.Status()
	if len(st) != 2 || st[0].Family != "echo" || st[1].Family != "other" {
		t.Fatalf("Status = %+v", st)
	}
	echo := st[0]
	if len(echo.Installed) != 2 || echo.Pin == nil || echo.Pin.Version != "1.0.0" || echo.Used == nil || !echo.Used.Pinned ||
		echo.Used.Version != "1.0.0" || !strings.HasPrefix(echo.Used.Why, "pinned in ") {
		t.Errorf("echo = %+v (used %+v)", echo, echo.Used)
	}
	if o := st[1]; o.Used == nil || o.Used.Source != SourcePATH || o.Used.Pinned || o.Used.Why != "found on PATH (unpinned)" {
		t.Errorf("other = %+v", o)
	}
	os.RemoveAll(filepath.Join(w.install, "echo", "1.0.0"))
	if st := w.f.Status(); st[0].Used != nil || !strings.Contains(st[0].Error, "does not exist") {
		t.Errorf("broken pin: %+v", st[0])
	}
}
