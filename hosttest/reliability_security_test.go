//go:build reliability

package hosttest

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestControlSocketModes: avenor run and avenor stable create the control
// socket's missing parent directory 0700 and the socket 0600.
func TestControlSocketModes(t *testing.T) {
	for _, cmd := range []string{"run", "stable"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			sock := filepath.Join(w.tmp, "new", "dir", "c.sock")
			args := []string{"stable", "--control-socket", sock}
			if cmd == "run" {
				args = []string{"--backend", "scripted", "--control-socket", sock, "--prompt", "sleep 20s"}
			}
			p := w.start(nil, args...)
			if !waitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }) {
				t.Fatalf("no socket at %s: %s", sock, p.stderr.String())
			}
			for path, want := range map[string]fs.FileMode{sock: 0o600, filepath.Dir(sock): 0o700} {
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Mode().Perm(); got != want {
					t.Errorf("%s: mode %v, want %v", path, got, want)
				}
			}
			p.signal(15)
			p.wait()
		})
	}
}

// TestHTTPDebugRefusesNonLoopback: --http-debug on an address that is not
// loopback is refused before anything listens, with an error naming it.
func TestHTTPDebugRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.0.2.1:8080", "example.com:80"} {
		for _, cmd := range []string{"run", "stable"} {
			t.Run(cmd+"/"+addr, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				sock := filepath.Join(w.tmp, "c.sock")
				args := []string{"stable", "--control-socket", sock, "--http-debug", addr}
				if cmd == "run" {
					args = []string{"--backend", "scripted", "--prompt", "say hi", "--control-socket", sock, "--http-debug", addr}
				}
				p := w.start(nil, args...)
				done := make(chan result, 1)
				go func() { done <- p.wait() }()
				select {
				case res := <-done:
					if res.code == 0 || !strings.Contains(res.stderr, "loopback") {
						t.Errorf("--http-debug %s: %v; want a non-zero exit naming loopback", addr, res)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("--http-debug %s was accepted: still running 10s later", addr)
				}
			})
		}
	}
}

// TestHTTPDebugRequiresToken: every request without the token, or with a
// wrong one, is refused; with it, answered.
func TestHTTPDebugRequiresToken(t *testing.T) {
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tokenFile := filepath.Join(w.root, "token")
	w.startStable("sec", nil, "--http-debug", addr, "--http-debug-token-file", tokenFile)
	raw, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(tokenFile); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	token := strings.TrimSpace(string(raw))
	c := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		name, method, path, token string
		ok                        bool
	}{
		{"runtimes without a token", "GET", "/runtimes", "", false},
		{"runtimes with a wrong token", "GET", "/runtimes", token + "x", false},
		{"runtimes with a prefix of the token", "GET", "/runtimes", token[:len(token)/2], false},
		{"status without a token", "GET", "/status/rt_1", "", false},
		{"events without a token", "GET", "/events", "", false},
		{"cancel without a token", "POST", "/cancel/rt_1", "", false},
		{"runtimes with the token", "GET", "/runtimes", token, true},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+addr+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("X-Avenor-Token", tc.token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		refused := resp.StatusCode == 401 || resp.StatusCode == 403
		if tc.ok == refused || (tc.ok && resp.StatusCode != 200) {
			t.Errorf("%s: %d %q", tc.name, resp.StatusCode, body)
		}
		if strings.Contains(string(body), token) {
			t.Errorf("%s: the answer holds the token", tc.name)
		}
	}
}

// TestPinnedPluginWrongHash: a project pins a plugin binary; once the binary
// changes, the run is refused before it executes, with a clear error and a
// FAILED sentinel, and no other binary is tried.
func TestPinnedPluginWrongHash(t *testing.T) {
	w := newWorld(t)
	bin := filepath.Join(w.root, "pinned", "avenor-plugin-scripted")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Readlink(filepath.Join(bins.pluginDir, "avenor-plugin-scripted"))
	if err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(src, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.work, ".avenor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := w.run("plugin", "use", "--path", bin, "scripted"); res.code != 0 {
		t.Fatalf("plugin use: %v", res)
	}
	marker := filepath.Join(w.root, "ran")
	run := func() (result, string) {
		sent := w.path("run.done")
		_ = os.Remove(sent)
		res := w.run("--backend", "scripted", "--dir", w.work, "--sentinel-file", sent,
			"--prompt", "shell touch "+marker)
		b, _ := os.ReadFile(sent)
		return res, string(b)
	}
	if res, _ := run(); res.code != 0 {
		t.Fatalf("run with the pinned binary intact: %v", res)
	}
	_ = os.Remove(marker)
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte("tampered"))
	f.Close()
	res, sent := run()
	if res.code == 0 {
		t.Fatalf("a pinned plugin whose hash changed ran: %v", res)
	}
	if !strings.Contains(strings.ToLower(res.stderr), "hash") && !strings.Contains(strings.ToLower(res.stderr), "sha256") {
		t.Errorf("the refusal does not name the hash: %q", res.stderr)
	}
	if !strings.HasPrefix(sent, "FAILED\n") {
		t.Errorf("sentinel after the refusal: %q", sent)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the tampered plugin (or another binary) ran the turn")
	}
}

// TestSecretsAcrossFailures: a secret in [backends.scripted] env never shows
// in stdout, stderr (trace level), events, sentinel or any file left behind,
// whichever way the run fails.
func TestSecretsAcrossFailures(t *testing.T) {
	cases := []struct {
		name, script, options string
		extra                 []string
	}{
		{"plugin crash", "shell true\nsay x\ndie", "", nil},
		{"open failure", "say x", `options = { fail_open = "cannot open" }`, nil},
		{"timeout", "shell true\nsleep 30s", "", []string{"--timeout", "1s"}},
		{"progress timeout", "shell true\nsleep 30s", "", []string{"--progress-timeout", "1s"}},
		{"runtime fault", "fail boom", "", nil},
		{"runtime child exits", "child 1\nshell true\nsleep 2s", "", nil},
		{"garbage line", "lines printf '\\001\\377garbage\\n'", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b [16]byte
			_, _ = rand.Read(b[:])
			marker := "sk-" + hex.EncodeToString(b[:])
			w := newWorld(t)
			w.userConfig("[backends.scripted]\nenv = { API_KEY = \"" + marker + "\" }\n" + tc.options + "\n")
			evPath, sent := w.path("out/events.ndjson"), w.path("out/run.done")
			if err := os.MkdirAll(filepath.Dir(evPath), 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--backend", "scripted", "--prompt", tc.script, "--on-event", evPath,
				"--sentinel-file", sent, "--dir", w.work}, tc.extra...)
			res := w.runEnv([]string{"AVENOR_LOG_LEVEL=trace"}, args...)
			if strings.Contains(res.stdout+res.stderr, marker) {
				t.Errorf("stdout or stderr holds the secret: %v", res)
			}
			if _, err := os.Stat(sent); err != nil {
				t.Errorf("no sentinel: %v", err)
			}
			userFile := filepath.Join(w.config, "avenor", "config.toml")
			for _, dir := range []string{w.root, w.tmp} {
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() || p == userFile {
						return nil
					}
					if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
						t.Errorf("%s holds the secret", p)
					}
					return nil
				})
			}
		})
	}
}
