package hosttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireSandbox skips a test that needs bubblewrap where it is not
// usable, and fails it instead when AVENOR_REQUIRE_SANDBOX is set (.ci/run
// installs bubblewrap and sets it).
func requireSandbox(t *testing.T) {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err == nil {
		err = exec.Command(path, "--ro-bind", "/", "/", "true").Run()
	}
	if err != nil {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatalf("AVENOR_REQUIRE_SANDBOX is set but bubblewrap is not usable: %v", err)
		}
		t.Skipf("bubblewrap is not usable (%v); install bubblewrap (apt-get install bubblewrap)", err)
	}
}

// beyondTmp is a directory of the test's own outside /tmp (under
// /var/tmp), removed when the test ends.
func beyondTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "avenor-sandbox-")
	if err != nil {
		t.Fatalf("a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// saidText is the turn's message text, chunk after chunk.
func saidText(evs []event) string {
	var said strings.Builder
	for _, ev := range only(evs, "agent.message_chunk") {
		content, _ := ev["content"].(map[string]any)
		text, _ := content["text"].(string)
		said.WriteString(text)
		said.WriteString("\n")
	}
	return said.String()
}

// TestSandboxWorkspace: under --sandbox workspace a runtime command writes
// in --dir, cannot write beside it (read-only file system) and cannot read
// a key planted in $HOME/.ssh; the turn completes and session.start names
// the sandbox.
func TestSandboxWorkspace(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	// The sandbox's /tmp is private, which would hide the world's root:
	// $HOME and the place written outside --dir lie beyond /tmp, where
	// only the boundary stands between them and the runtime.
	home, secret, outside := plantSecret(t)
	workspaceBoundary(t, w, []string{"HOME=" + home}, "bubblewrap", secret, outside, "", "Read-only file system")
}

// workspaceBoundary runs, under --sandbox workspace with env, a command
// that writes in --dir, writes into outside and reads secret, then runs
// more; it checks what holds under any mechanism: the turn said in-ok,
// out-denied, read-denied and each of said, never the key; the write in
// --dir landed and the one outside did not; session.start names mech; the
// turn completed.
func workspaceBoundary(t *testing.T, w *world, env []string, mech, secret, outside, more string, said ...string) {
	t.Helper()
	script := "lines echo in > in.txt && echo in-ok; echo out 2>&1 > " + outside + "/out.txt || echo out-denied; " +
		"cat " + secret + " 2>/dev/null || echo read-denied" + more + "\n"
	evPath := w.path("events.ndjson")
	res := w.runEnv(env, "--backend", "scripted", "--dir", w.work, "--prompt", script, "--sandbox", "workspace", "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	text := saidText(evs)
	for _, want := range append([]string{"in-ok", "out-denied", "read-denied"}, said...) {
		if !strings.Contains(text, want) {
			t.Errorf("the turn said %q; want it to contain %q", text, want)
		}
	}
	if strings.Contains(text, "PLANTED-SECRET") {
		t.Errorf("the planted key was read inside the sandbox: %q", text)
	}
	if _, err := os.Stat(filepath.Join(w.work, "in.txt")); err != nil {
		t.Errorf("the write in --dir did not land: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a write outside --dir landed")
	}
	start := only(evs, "session.start")[0]
	want := map[string]any{"mechanism": mech, "profile": "workspace", "network": "host"}
	if !equalJSON(start["sandbox"], want) {
		t.Errorf("session.start sandbox %v; want %v", start["sandbox"], want)
	}
	if end := only(evs, "session.end"); len(end) != 1 || end[0].str("stop_reason") != "end_turn" {
		t.Errorf("session.end %v; want the turn completed", end)
	}
}

// TestSandboxReadOnlyNetworkNone: under read-only nothing but the private
// /tmp is writable, --dir included; with network none only a loopback is
// there.
func TestSandboxReadOnlyNetworkNone(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	script := "lines echo x > in.txt 2>/dev/null || echo dir-denied; echo x > /tmp/t && echo tmp-ok; " +
		"ls /sys/class/net | tr '\\n' ' '; echo\n"
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", script, "--sandbox", "read-only",
		"--sandbox-network", "none", "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	said := saidText(readEvents(t, evPath))
	for _, want := range []string{"dir-denied", "tmp-ok", "lo \n"} {
		if !strings.Contains(said, want) {
			t.Errorf("the turn said %q; want it to contain %q", said, want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.work, "in.txt")); err == nil {
		t.Error("a write in --dir landed under read-only")
	}
}

// TestSandboxRefused: a sandbox this machine or the backend cannot
// enforce, and bad sandbox input, are refused before anything starts:
// exit 1, a FAILED sentinel, one message naming the problem and the fix.
// Nothing falls back to running unsandboxed.
func TestSandboxRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		backend  string
		needBwrp bool
		env      func(w *world) []string
		args     func(w *world) []string
		msg      string // stderr after "avenor: "; <root> is the world's root
	}{
		{"bubblewrap absent from PATH, Landlock disabled", "scripted", false, func(w *world) []string {
			empty := w.path("emptybin")
			if err := os.MkdirAll(empty, 0o755); err != nil {
				w.t.Fatal(err)
			}
			return []string{"PATH=" + empty, "AVENOR_SANDBOX_DISABLE_LANDLOCK=1"}
		}, func(w *world) []string { return []string{"--sandbox", "workspace"} },
			"the sandbox cannot be enforced on this machine: bubblewrap (bwrap not found in PATH), landlock (disabled by AVENOR_SANDBOX_DISABLE_LANDLOCK=1); install bubblewrap (apt-get install bubblewrap) or run on a kernel with Landlock; nothing was started"},
		{"unknown profile", "scripted", false, nil, func(w *world) []string { return []string{"--sandbox", "strict"} },
			`--sandbox: invalid sandbox profile "strict"; valid profiles: off, workspace, read-only`},
		{"unknown network", "scripted", false, nil, func(w *world) []string { return []string{"--sandbox", "workspace", "--sandbox-network", "lan"} },
			`--sandbox-network: invalid sandbox network "lan"; valid: host, none, model, allow=host[:port],… (e.g. allow=api.example.com:443,:8080)`},
		{"a malformed allow-list entry", "scripted", false, nil, func(w *world) []string { return []string{"--sandbox", "workspace", "--sandbox-network", "allow=a b"} },
			`--sandbox-network: sandbox network allow-list entry "a b": "a b" is not a host name or IP address; valid: host, none, model, allow=host[:port],… (e.g. allow=api.example.com:443,:8080)`},
		{"an allow-list port out of range", "scripted", false, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-network", "allow=a.io:70000"}
		}, `--sandbox-network: sandbox network allow-list entry "a.io:70000": port "70000" is not a number from 1 to 65535; valid: host, none, model, allow=host[:port],… (e.g. allow=api.example.com:443,:8080)`},
		{"an empty allow-list", "scripted", false, nil, func(w *world) []string { return []string{"--sandbox", "workspace", "--sandbox-network", "allow="} },
			`--sandbox-network: sandbox network "allow=" allows nothing; name at least one host[:port], or use none`},
		{"model for a backend that cannot name its endpoints", "scripted", true, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-network", "model"}
		}, `backend "scripted" cannot say which model endpoints its runtime uses (capability "sandbox_network_model"), so --sandbox-network model cannot allow them; name them with --sandbox-network allow=host:port`},
		{"a host allow-list under landlock", "scripted", false, func(w *world) []string { return []string{forceLandlock} }, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-network", "allow=a.io:443"}
		}, `the sandbox cannot be enforced on this machine: landlock (landlock can allow TCP ports only, on every host: --sandbox-network allow=a.io:443 needs bubblewrap, or write it :PORT); run on a kernel with Landlock; nothing was started`},
		{"model under landlock", "scripted", false, func(w *world) []string { return []string{forceLandlock} }, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-network", "model"}
		}, `the sandbox cannot be enforced on this machine: landlock (landlock cannot tell hosts apart (--sandbox-network model needs bubblewrap)); run on a kernel with Landlock; nothing was started`},
		{"relative allow-write", "scripted", false, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-allow-write", "build"}
		}, `--sandbox-allow-write "build": give an absolute path`},
		{"missing allow-write", "scripted", false, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--sandbox-allow-write", w.path("nope")}
		}, "--sandbox-allow-write <root>/nope: no such file or directory; create it first or drop it"},
		{"allow-write without a sandbox", "scripted", false, nil, func(w *world) []string {
			return []string{"--sandbox-allow-write", w.root}
		}, "--sandbox-network, --sandbox-allow-write and --sandbox-deny-read need --sandbox workspace or read-only"},
		{"a loop run, whose phases do not carry a sandbox", "scripted", true, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace", "--loop-file", w.writeFile("loop.toml", "")}
		}, "--sandbox is not supported with --loop-file or --team-file yet; run the phases without it or one at a time with avenor run --sandbox"},
		{"a backend that cannot launch its runtime inside one", "echo", true, nil, func(w *world) []string {
			return []string{"--sandbox", "workspace"}
		}, `backend "echo" cannot launch its runtime inside a sandbox (--sandbox workspace); run it with --sandbox off or choose a backend that declares capability "sandbox"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.needBwrp {
				requireSandbox(t)
			}
			w := newWorld(t)
			var env []string
			if tc.env != nil {
				env = tc.env(w)
			}
			script := "lines touch " + w.path("ran") + "\n"
			args := append([]string{"--backend", tc.backend, "--dir", w.work, "--prompt", script}, tc.args(w)...)
			sent := w.path("run.done")
			res := w.runEnv(env, append(args, "--sentinel-file", sent, "--run-id", "b")...)
			msg := strings.ReplaceAll(tc.msg, "<root>", w.root)
			if res.code != 1 || !strings.Contains(res.stderr, "avenor: "+msg+"\n") {
				t.Fatalf("want exit 1 and stderr with %q; got %v", msg, res)
			}
			checkSentinel(t, sent, validationSentinel(msg, "b"))
			if _, err := os.Stat(w.path("ran")); err == nil {
				t.Error("the runtime ran although the sandbox was refused")
			}
		})
	}
}

// TestSandboxOffIsToday: without --sandbox, and with --sandbox off,
// session.start has no sandbox block and the runtime writes where it
// always could — bubblewrap or not.
func TestSandboxOffIsToday(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--sandbox", "off"}} {
		w := newWorld(t)
		outside := w.path("outside")
		evPath := w.path("events.ndjson")
		script := "lines echo out > " + outside + " && echo out-ok\n"
		res := w.run(append([]string{"--backend", "scripted", "--dir", w.work, "--prompt", script, "--on-event", evPath}, args...)...)
		if res.code != 0 {
			t.Fatalf("%v: run: %v", args, res)
		}
		evs := readEvents(t, evPath)
		if _, ok := only(evs, "session.start")[0]["sandbox"]; ok {
			t.Errorf("%v: session.start has a sandbox block", args)
		}
		if !strings.Contains(saidText(evs), "out-ok") {
			t.Errorf("%v: the write outside --dir failed without a sandbox", args)
		}
	}
}
