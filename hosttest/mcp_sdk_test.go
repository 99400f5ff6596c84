package hosttest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official MCP TypeScript SDK client and the MCP inspector CLI, pinned
// in testdata/mcpsdk/package.json and package-lock.json, drive `avenor mcp`
// as an agent host built on them would (testdata/mcpsdk/check.mjs). They
// are installed with `npm ci` into a cache per lock file:
//
//	${XDG_CACHE_HOME:-$HOME/.cache}/avenor-mcpsdk/<sha256 of the lock, 16 hex>
//
// reused without the network once there. Without node and npm (or with
// the registry unreachable) the test skips loudly, unless
// AVENOR_REQUIRE_NODE is set (.ci/run sets it): then it fails.

// requireNode skips or fails the test with msg.
func requireNode(t *testing.T, msg string) {
	t.Helper()
	msg = "!!! SKIP: " + msg + "; the official MCP SDK client did NOT run against avenor mcp"
	if os.Getenv("AVENOR_REQUIRE_NODE") != "" {
		t.Fatal(msg + " and AVENOR_REQUIRE_NODE is set")
	}
	t.Skip(msg)
}

// mcpSDK installs the pinned packages (once per lock) and returns the
// directory holding check.mjs and node_modules, and node's path.
func mcpSDK(t *testing.T) (dir, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		requireNode(t, "no node on PATH (install Node.js 20+ with npm)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		requireNode(t, "no npm on PATH (install Node.js 20+ with npm)")
	}
	src := filepath.Join("testdata", "mcpsdk")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			requireNode(t, "no cache directory for the npm packages ($HOME and XDG_CACHE_HOME unset)")
		}
		cache = filepath.Join(home, ".cache")
	}
	dir = filepath.Join(cache, "avenor-mcpsdk", hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err != nil {
		tmp := dir + ".tmp"
		_ = os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"package.json", "package-lock.json"} {
			copyFile(t, filepath.Join(src, f), filepath.Join(tmp, f))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			_ = os.RemoveAll(tmp)
			ping := exec.CommandContext(ctx, npm, "ping", "--fetch-retries=1", "--fetch-timeout=20000")
			if perr := ping.Run(); perr != nil {
				requireNode(t, "the npm registry is unreachable (npm ping failed); npm ci:\n"+string(out))
			}
			t.Fatalf("npm ci of testdata/mcpsdk: %v\n%s", err, out)
		}
		if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatal(err)
		}
	}
	// The script is the worktree's, every time; the packages the cache's.
	copyFile(t, filepath.Join(src, "check.mjs"), filepath.Join(dir, "check.mjs"))
	return dir, node
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := to + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

// sdkStep is one line check.mjs prints.
type sdkStep struct {
	Step  string `json:"step"`
	Error string `json:"error"`
	Tools []struct {
		Name  string `json:"name"`
		Title string `json:"title"`
	} `json:"tools"`
}

// runCheck runs check.mjs with args and fails unless every step passed;
// it returns the tool list the SDK client received.
func runCheck(t *testing.T, node, dir string, env []string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "check.mjs")}, args...)...)
	cmd.Env, cmd.Dir = env, dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var tools []string
	done := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var st sdkStep
		if json.Unmarshal(sc.Bytes(), &st) != nil {
			continue
		}
		if st.Error != "" {
			t.Errorf("SDK client, step %s: %s", st.Step, st.Error)
		}
		for _, tl := range st.Tools {
			tools = append(tools, tl.Name+" — "+tl.Title)
		}
		done = done || st.Step == "done"
	}
	if err != nil || !done {
		t.Fatalf("check.mjs %s: %v (done %v)\nstdout:\n%s\nstderr:\n%s", args[0], err, done, out, stderr.String())
	}
	return tools
}

// TestMCPOfficialSDK: the official MCP TypeScript SDK client lists avenor
// mcp's tools over stdio and over Streamable HTTP (the SDK validates every
// tool definition) and calls every tool once (the SDK validates each
// structured result against the tool's output schema); the inspector
// CLI's tools/list, with its schema portability check strict, exits 0 and
// warns of nothing.
func TestMCPOfficialSDK(t *testing.T) {
	dir, node := mcpSDK(t)
	env := func(w *world, extra ...string) []string {
		// node itself must be found; the world's PATH holds no node.
		e := append([]string{}, w.env...)
		for i, kv := range e {
			if strings.HasPrefix(kv, "PATH=") {
				e[i] = kv + ":" + filepath.Dir(node)
			}
		}
		return append(e, extra...)
	}

	t.Run("stdio", func(t *testing.T) {
		w, sock := mcpWorld(t)
		tools := runCheck(t, node, dir, env(w), "stdio", bins.avenor, sock, w.work)
		t.Logf("the SDK client's tool list over stdio:\n  %s", strings.Join(tools, "\n  "))
		if len(tools) != len(mcpReference) {
			t.Errorf("%d tools, want %d", len(tools), len(mcpReference))
		}
	})

	t.Run("http", func(t *testing.T) {
		w, sock := mcpWorld(t)
		const token = "sdk-check-token"
		base, _ := startMCPHTTP(t, w, sock, token)
		tools := runCheck(t, node, dir, env(w, "MCP_AUTH_TOKEN="+token), "http", base, "-", w.work)
		t.Logf("the SDK client's tool list over Streamable HTTP:\n  %s", strings.Join(tools, "\n  "))
		if len(tools) != len(mcpReference) {
			t.Errorf("%d tools, want %d", len(tools), len(mcpReference))
		}
	})

	t.Run("inspector", func(t *testing.T) {
		w, sock := mcpWorld(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", ".bin", "mcp-inspector"), "--cli",
			bins.avenor, "mcp", "--control-socket", sock, "--idle-timeout", "0", "--method", "tools/list", "--strict")
		cmd.Env, cmd.Dir = env(w), w.work
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector --cli tools/list: %v\n%s\n%s", err, out, stderr.String())
		}
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &list); err != nil || len(list.Tools) != len(mcpReference) {
			t.Errorf("inspector tools/list: %v, %d tools\n%s", err, len(list.Tools), out)
		}
		if strings.Contains(stderr.String(), "Warning") || strings.Contains(stderr.String(), "rror") {
			t.Errorf("the inspector's schema check complains:\n%s", stderr.String())
		}
	})
}
