package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeBlock is one fenced code block of a markdown file.
type readmeBlock struct {
	lang string // the fence's info string, first word
	body string
	line int // of the opening fence
}

func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []readmeBlock
	var cur *readmeBlock
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "```")), " ")
			cur = &readmeBlock{lang: lang, line: i + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: unterminated code block", path, cur.line)
	}
	return out
}

// readmeModule is the module directory sdk/README.md's first block
// creates; its "// File:" paths are relative to it.
const readmeModule = "avenor-plugin-hello"

// TestREADMEAsAThirdParty follows sdk/README.md alone, as a third party
// would, outside the workspace (GOWORK=off, the sdk through a replace):
// every ```go block is written to the file its first line names, and every
// ```sh block runs, in order, as one script — build, test with the kit,
// verify, install, pin, run, a second release, then copying the echo
// example and shipping that too.
func TestREADMEAsAThirdParty(t *testing.T) {
	w := newPluginWorld(t)
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk"))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(sdk, "README.md")
	work := w.mkdir("third-party") // a temp dir: outside the avenor workspace

	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\n")
	var goFiles []string
	for _, b := range readmeBlocks(t, readme) {
		switch b.lang {
		case "go":
			first, rest, _ := strings.Cut(b.body, "\n")
			name, ok := strings.CutPrefix(first, "// File: ")
			if !ok {
				t.Fatalf("%s:%d: a go block must start with \"// File: <path>\"", readme, b.line)
			}
			path := filepath.Join(work, readmeModule, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(strings.TrimPrefix(rest, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			goFiles = append(goFiles, path)
		case "sh":
			fmt.Fprintf(&script, "# %s:%d\n%s", filepath.Base(readme), b.line, b.body)
		}
	}
	if len(goFiles) < 3 {
		t.Fatalf("found %d go files in %s", len(goFiles), readme)
	}
	if out, err := exec.Command("gofmt", "-l", filepath.Join(work, readmeModule)).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("README Go code is not gofmt'd: %s %v", out, err)
	}

	goEnv := func(key string) string {
		out, err := exec.Command("go", "env", key).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", key, err)
		}
		return strings.TrimSpace(string(out))
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		"AVENOR_SDK=" + sdk,
		"PATH=" + w.bin("avenor") + ":" + filepath.Dir(goBin) + ":/usr/bin:/bin",
		"GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=",
		// The user's module and build caches, not the fake HOME's (nothing
		// is downloaded that the workspace did not already need).
		"GOPATH=" + goEnv("GOPATH"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOCACHE=" + goEnv("GOCACHE"),
		"GOPROXY=" + goEnv("GOPROXY"), "GONOSUMDB=" + goEnv("GONOSUMDB"), "GOSUMDB=" + goEnv("GOSUMDB"),
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = work
	cmd.Env = append(append([]string{}, w.env...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("following %s failed: %v\n--- script\n%s\n--- output\n%s", readme, err, script.String(), out)
	}
	mustContain(t, "the README's commands", string(out),
		"ok  \texample.com/avenor-plugin-hello", // its conformance test
		"/avenor-plugin-hello/avenor-plugin-hello (hello 1.0.0)\n", " 0 failed, ",
		"PASS  hello/permission/allow_lets_the_turn_finish\n",
		"SKIP  hello/resume/resume_continues_a_session_by_id: resume is not advertised\n",
		"installed hello 1.0.0 at ", "pinned hello 1.0.0 (sha256:", "[plugins.hello]\nversion = \"1.0.0\"\nhash = \"sha256:",
		"installed hello 1.1.0 at ", "pinned hello 1.1.0", "unpinned hello",
		"ok  \texample.com/avenor-plugin-myecho", "installed echo 2.0.0 at ", "pinned echo 2.0.0")

	project := filepath.Join(work, "my-project")
	for file, want := range map[string][2]string{
		"events.ndjson": {"hello", "1.0.0"},
		"myecho.ndjson": {"echo", "2.0.0"},
	} {
		start := sessionStart(t, filepath.Join(project, file))
		if start["plugin"] != want[0] || start["plugin_version"] != want[1] {
			t.Errorf("%s: session.start = %v, want plugin %s %s", file, start, want[0], want[1])
		}
	}
}

func sessionStart(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["event"] == "session.start" {
			return ev
		}
	}
	t.Fatalf("%s has no session.start", path)
	return nil
}
