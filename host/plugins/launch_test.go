package plugins

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildSDK builds a main package of the sdk module into dir/name.
func buildSDK(t *testing.T, dir, name, pkg string, ldflags ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if len(ldflags) > 0 {
		args = append(args, "-ldflags", strings.Join(ldflags, " "))
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = filepath.Join("..", "..", "sdk")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// TestAPluginFromAnotherMajorIsRefusedAtOnce: a plugin that speaks only
// protocol 99 is refused at the handshake, quickly, with what to install.
func TestAPluginFromAnotherMajorIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	bin := buildSDK(t, dir, "avenor-plugin-major99", "./plugintest/internal/major99")
	found, err := Finder{PluginPath: []string{dir}}.Find("major99")
	if err != nil {
		t.Fatal(err)
	}
	wants := []string{
		"avenor-plugin-major99 at " + bin + " speaks only plugin protocol 99",
		"this avenor speaks plugin protocol 1",
		"Install a release of avenor-plugin-major99 built for plugin protocol 1 (`avenor plugin install <binary>`, then `avenor plugin use major99@<version>`)",
		"or upgrade avenor to a release that speaks plugin protocol 99",
	}
	start := time.Now()
	_, err = Launch(context.Background(), found, "major99", nil)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusing took %v", took)
	}
	var ie *IncompatibleError
	if !errors.As(err, &ie) || !errors.Is(err, ErrIncompatible) || ie.PluginMajor != 99 {
		t.Fatalf("Launch = %v, want an IncompatibleError for major 99", err)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	_, err = Install(context.Background(), bin, filepath.Join(dir, "installed"))
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), wants[0]) {
		t.Errorf("Install = %v, want the same refusal", err)
	}
}

// TestInstallSideBySideAndPinEach installs two builds of echo and pins each.
func TestInstallSideBySideAndPinEach(t *testing.T) {
	dir := t.TempDir()
	inst := filepath.Join(dir, "plugins")
	const v = "-X github.com/avenor-go/avenor/sdk/examples/echo.Version="
	for _, version := range []string{"1.0.0", "1.1.0"} {
		bin := buildSDK(t, filepath.Join(dir, version), "avenor-plugin-echo", "./examples/echo/cmd/avenor-plugin-echo", v+version)
		got, err := Install(context.Background(), bin, inst)
		if err != nil {
			t.Fatal(err)
		}
		if got.Version != version || got.Family != "echo" || InstalledHash(got.Path) != got.SHA256 || got.Replaced != "" {
			t.Fatalf("Install = %+v", got)
		}
	}
	for _, version := range []string{"1.0.0", "1.1.0"} {
		lock := &Lock{Project: filepath.Join(dir, "project-"+version)}
		if _, err := PinInstalled(lock, inst, "echo", version); err != nil {
			t.Fatal(err)
		}
		found, err := Finder{InstallDir: inst, Lock: lock}.Find("echo")
		if err != nil {
			t.Fatal(err)
		}
		l, err := Launch(context.Background(), found, "echo", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Client.Info().Version; got != version {
			t.Errorf("pinned %s, launched %s", version, got)
		}
		l.Client.Kill()
	}
	// Reinstalling a different binary as 1.0.0 says so.
	other := buildSDK(t, filepath.Join(dir, "again"), "avenor-plugin-echo", "./examples/echo/cmd/avenor-plugin-echo", v+"1.0.0", "-X github.com/avenor-go/avenor/sdk/plugin.SDKVersion=9.9.9")
	got, err := Install(context.Background(), other, inst)
	if err != nil || got.Replaced == "" || got.Replaced == got.SHA256 {
		t.Fatalf("reinstall = %+v, %v; want Replaced set", got, err)
	}
}
