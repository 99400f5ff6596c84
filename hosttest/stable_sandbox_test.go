package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestStableSpawnSandbox: a spawn with sandbox workspace runs its runtime
// inside the boundary — a tool writes in its dir, its write outside and
// its read of a planted key are denied, each an avenor.sandbox.denied —
// and session.start records the sandbox; a spawn with sandbox_allow_write
// of that outside directory may write there.
func TestStableSpawnSandbox(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	c, evs, outside := deniedSpawn(t, w, "sandbox")
	start := only(evs, "session.start")[0]
	if !equalJSON(start["sandbox"], map[string]any{"mechanism": "bubblewrap", "profile": "workspace", "network": "host"}) {
		t.Errorf("session.start sandbox %v", start["sandbox"])
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a write outside the spawn's dir landed")
	}
	if _, err := os.Stat(filepath.Join(w.work, "in.txt")); err != nil {
		t.Errorf("the write in the spawn's dir did not land: %v", err)
	}

	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "toolsh touch " + outside + "/allowed.txt\n",
		Sandbox: "workspace", SandboxAllowWrite: []string{outside}})
	rt := waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	if d := only(readEvents(t, rt.EventPath), "avenor.sandbox.denied"); len(d) != 0 {
		t.Errorf("a write sandbox_allow_write allows was denied: %v", d)
	}
	if _, err := os.Stat(filepath.Join(outside, "allowed.txt")); err != nil {
		t.Errorf("the write sandbox_allow_write allows did not land: %v", err)
	}
}

// deniedSpawn starts a supervisor (name) with a planted key as $HOME's
// (and env), spawns denialScript under sandbox workspace, checks its
// denials (checkDenials) and returns the supervisor's client, the
// runtime's events and the directory it could not write into.
func deniedSpawn(t *testing.T, w *world, name string, env ...string) (*client.Client, []event, string) {
	t.Helper()
	home, secret, outside := plantSecret(t)
	c := w.startStable(name, append([]string{"HOME=" + home}, env...)).client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: denialScript(outside, secret), Sandbox: "workspace"})
	rt := waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	evs := readEvents(t, rt.EventPath)
	checkDenials(t, evs, outside+"/out.txt", secret)
	return c, evs, outside
}

// TestStableSpawnSandboxRefused: sandbox params that do not read, and a
// sandbox the backend cannot enforce, refuse the spawn with a clear error
// before anything starts; no runtime is listed.
func TestStableSpawnSandboxRefused(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	c := w.startStable("sandbox-refused", nil).client()
	loop := w.writeFile("work/loop.json", "{}")
	cases := []struct {
		name   string
		params map[string]any
		code   int
		msg    string
	}{
		{"unknown profile", map[string]any{"sandbox": "strict"}, -32602, `sandbox: invalid sandbox profile "strict"; valid profiles: off, workspace, read-only`},
		{"unknown network", map[string]any{"sandbox": "workspace", "sandbox_network": "lan"}, -32602, `sandbox_network: invalid sandbox network "lan"; valid: host, none`},
		{"port out of range", map[string]any{"sandbox": "workspace", "sandbox_network": "allow=a.io:0"}, -32602,
			`sandbox_network: sandbox network allow-list entry "a.io:0": port "0" is not a number from 1 to 65535`},
		{"relative allow-write", map[string]any{"sandbox": "workspace", "sandbox_allow_write": []string{"build"}}, -32602, `sandbox_allow_write "build": give an absolute path`},
		{"missing allow-write", map[string]any{"sandbox": "workspace", "sandbox_allow_write": []string{w.path("nope")}}, -32602,
			"sandbox_allow_write " + w.path("nope") + ": no such file or directory; create it first or drop it"},
		{"paths without a sandbox", map[string]any{"sandbox_deny_read": []string{"/etc/hosts"}}, -32602,
			"sandbox_network, sandbox_allow_write and sandbox_deny_read need sandbox workspace or read-only"},
		{"a loop", map[string]any{"sandbox": "workspace", "prompt": nil, "loop_file": loop}, -32000,
			"sandbox is not supported with loop_file or team_file yet"},
		{"a backend that cannot launch inside one", map[string]any{"sandbox": "workspace", "backend": "echo"}, -32000,
			`backend "echo" cannot launch its runtime inside a sandbox (sandbox workspace); run it with sandbox off or choose a backend that declares capability "sandbox"; nothing was started`},
	}
	for _, tc := range cases {
		params := map[string]any{"backend": "scripted", "dir": w.work, "prompt": "toolsh touch " + w.path("ran") + "\n"}
		for k, v := range tc.params {
			if v == nil {
				delete(params, k)
				continue
			}
			params[k] = v
		}
		_, err := spawnLaunch(t, c, params)
		if err == nil {
			t.Errorf("%s: the spawn was not refused", tc.name)
			continue
		}
		if re := rpcError(t, err); re.Code != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v (code %d); want code %d with %q", tc.name, err, re.Code, tc.code, tc.msg)
		}
	}
	if list, err := c.List(ctxT(t, 10*time.Second)); err != nil || len(list) != 0 {
		t.Errorf("after refused spawns list is %v (%v); want no runtime", list, err)
	}
	if _, err := os.Stat(w.path("ran")); err == nil {
		t.Error("a refused spawn's runtime ran")
	}
}

// TestStableSpawnSandboxLandlock: a spawn chooses its mechanism as avenor
// run does — under Landlock (forced in the supervisor's environment) its
// write outside and its read of a planted key are denied, each an
// avenor.sandbox.denied, and session.start names landlock.
func TestStableSpawnSandboxLandlock(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	_, evs, _ := deniedSpawn(t, newWorld(t), "sandbox-landlock", forceLandlock)
	start := only(evs, "session.start")[0]
	if sb, _ := start["sandbox"].(map[string]any); sb["mechanism"] != "landlock" {
		t.Errorf("session.start sandbox %v; want mechanism landlock", start["sandbox"])
	}
}
