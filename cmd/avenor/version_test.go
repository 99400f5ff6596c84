package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// TestVersionCommand: `avenor version` starts with --version's line and
// names the commit, Go, the platform and the plugin protocol; --json carries
// the same.
func TestVersionCommand(t *testing.T) {
	oldV, oldC := Version, Commit
	Version, Commit = "1.2.3", "abc123"
	t.Cleanup(func() { Version, Commit = oldV, oldC })

	var out, errb bytes.Buffer
	if code := Main([]string{"version"}, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("avenor version: exit %d, stderr %q", code, errb.String())
	}
	var ver bytes.Buffer
	Main([]string{"--version"}, Env{Stdout: &ver, Stderr: &errb, Getenv: func(string) string { return "" }})
	if ver.String() != "avenor v1.2.3\n" {
		t.Fatalf("--version = %q, want %q (unchanged by the version command)", ver.String(), "avenor v1.2.3\n")
	}
	if !strings.HasPrefix(out.String(), ver.String()) {
		t.Errorf("avenor version does not start with --version's line %q:\n%s", ver.String(), out.String())
	}
	for _, want := range []string{"commit:          abc123\n", "go:              " + runtime.Version() + "\n",
		"platform:        " + runtime.GOOS + "/" + runtime.GOARCH + "\n", "plugin protocol: 1\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("avenor version lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := Main([]string{"version", "--json"}, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}); code != 0 {
		t.Fatalf("avenor version --json: exit %d, stderr %q", code, errb.String())
	}
	var got versionInfo
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("avenor version --json: %v\n%s", err, out.String())
	}
	want := versionInfo{Version: "1.2.3", Commit: "abc123", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, PluginProtocol: plugin.ProtocolVersion}
	if got != want {
		t.Errorf("avenor version --json = %+v, want %+v", got, want)
	}
}

// TestBuildCommit: the linked commit wins; else the build info's revision,
// marked when the tree was modified; else "unknown".
func TestBuildCommit(t *testing.T) {
	info := func(settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Settings: settings}, true }
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "f00d"}
	cases := []struct {
		name, linked string
		read         func() (*debug.BuildInfo, bool)
		want         string
	}{
		{"linked", "abc", info(rev), "abc"},
		{"build info", "", info(rev), "f00d"},
		{"modified", "", info(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "f00d-dirty"},
		{"no vcs", "", info(), "unknown"},
		{"no build info", "", func() (*debug.BuildInfo, bool) { return nil, false }, "unknown"},
	}
	for _, tc := range cases {
		if got := buildCommit(tc.linked, tc.read); got != tc.want {
			t.Errorf("%s: buildCommit = %q, want %q", tc.name, got, tc.want)
		}
	}
}
