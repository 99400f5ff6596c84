package hosttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// Mechanism switches (docs/sandbox.md#switches).
const (
	forceLandlock   = "AVENOR_SANDBOX_MECHANISM=landlock"
	forceBwrap      = "AVENOR_SANDBOX_MECHANISM=bubblewrap"
	disableLandlock = "AVENOR_SANDBOX_DISABLE_LANDLOCK=1"
)

// requireLandlock skips a test that needs a kernel enforcing Landlock,
// and fails it instead when AVENOR_REQUIRE_SANDBOX is set.
func requireLandlock(t *testing.T) {
	t.Helper()
	if agentproc.LandlockABI() < 1 {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatal("AVENOR_REQUIRE_SANDBOX is set but this kernel does not enforce Landlock")
		}
		t.Skip("this kernel does not enforce Landlock; " + agentproc.LandlockInstallHint)
	}
}

// requireMechanism is requireSandbox or requireLandlock, by name, and the
// switch forcing it.
func requireMechanism(t *testing.T, mech string) string {
	t.Helper()
	if mech == "landlock" {
		requireLandlock(t)
		return forceLandlock
	}
	requireSandbox(t)
	return forceBwrap
}

// TestSandboxLandlockWorkspace: under --sandbox workspace with Landlock
// forced, a runtime command writes in --dir, cannot write beside it and
// cannot read a key planted in $HOME/.ssh; the turn completes, session.start
// names landlock, and the run's private temp dir is gone afterwards.
func TestSandboxLandlockWorkspace(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	w := newWorld(t)
	home, secret, outside := plantSecret(t)
	workspaceBoundary(t, w, []string{"HOME=" + home, forceLandlock}, "landlock", secret, outside,
		`; echo t > "$TMPDIR/t" && echo tmp-ok`, "Permission denied", "tmp-ok")
	if left, _ := filepath.Glob(filepath.Join(w.tmp, "avenor-sandbox-*")); len(left) > 0 {
		t.Errorf("private temp dirs left behind: %v", left)
	}
}

// TestSandboxLandlockRefusesNetworkNone: Landlock cannot take the network
// away, so with it forced --sandbox-network none is refused before
// anything starts.
func TestSandboxLandlockRefusesNetworkNone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sent := w.path("run.done")
	res := w.runEnv([]string{forceLandlock}, "--backend", "scripted", "--dir", w.work, "--prompt", "lines touch "+w.path("ran")+"\n",
		"--sandbox", "read-only", "--sandbox-network", "none", "--sentinel-file", sent, "--run-id", "n")
	if res.code != 1 || !strings.Contains(res.stderr, "landlock (") {
		t.Fatalf("want exit 1 naming landlock; got %v", res)
	}
	if _, err := os.Stat(w.path("ran")); err == nil {
		t.Error("the runtime ran although the sandbox was refused")
	}
}

// TestSandboxFailClosed: with bubblewrap absent from PATH and Landlock
// disabled by its switch, a workspace run is refused before anything
// starts (exit 1, a FAILED sentinel naming both and how to get one, no
// plugin, no runtime); the same machine runs --sandbox off.
func TestSandboxFailClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	empty := w.path("emptybin")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + empty, disableLandlock}
	ran := w.path("ran")
	script := "lines : > " + ran + "\n" // no touch: PATH is empty
	sent := w.path("run.done")
	res := w.runEnv(env, "--backend", "scripted", "--dir", w.work, "--prompt", script, "--sandbox", "workspace", "--sentinel-file", sent, "--run-id", "fc")
	msg := "the sandbox cannot be enforced on this machine: bubblewrap (bwrap not found in PATH), landlock (disabled by AVENOR_SANDBOX_DISABLE_LANDLOCK=1); " +
		"install bubblewrap (apt-get install bubblewrap) or run on a kernel with Landlock; nothing was started"
	if res.code != 1 || !strings.Contains(res.stderr, "avenor: "+msg+"\n") {
		t.Fatalf("want exit 1 and %q; got %v", msg, res)
	}
	checkSentinel(t, sent, validationSentinel(msg, "fc"))
	if _, err := os.Stat(ran); err == nil {
		t.Error("the runtime ran although the sandbox was refused")
	}
	res = w.runEnv(env, "--backend", "scripted", "--dir", w.work, "--prompt", script, "--sandbox", "off")
	if res.code != 0 {
		t.Fatalf("--sandbox off on the same machine: %v", res)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("--sandbox off did not run: %v", err)
	}
}

// TestSandboxNoOrphan: a SIGKILL of the plugin while a sandboxed tool (a
// sleep the runtime started in the background) runs leaves nothing: not
// the tool, not the runtime, not bwrap, not the plugin — under either
// mechanism; Landlock's private temp dir is removed by the reaper.
func TestSandboxNoOrphan(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{"bubblewrap", "landlock"} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			force := requireMechanism(t, mech)
			w := newWorld(t)
			// A sleep of a length no other process has, to find it by.
			marker := fmt.Sprintf("%d.%d", 300+os.Getpid()%100, time.Now().UnixNano()%1000000)
			script := fmt.Sprintf("lines sleep %s & echo started; wait\n", marker)
			evPath := w.path("events.ndjson")
			p := w.start([]string{force}, "--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--sandbox", "workspace", "--prompt", script)
			waitForLog(t, evPath, "started", 15*time.Second)
			var tools []int
			if !waitFor(10*time.Second, func() bool { tools = pidsWithArg(marker); return len(tools) > 0 }) {
				t.Fatal("the sandboxed sleep never showed up")
			}
			plugins := childrenOf(p.pid(), "avenor-plugin-scripted")
			if len(plugins) != 1 {
				t.Fatalf("plugin processes of avenor %d: %v", p.pid(), plugins)
			}
			tree := descendants(plugins[0])
			if err := syscall.Kill(plugins[0], syscall.SIGKILL); err != nil {
				t.Fatalf("killing the plugin: %v", err)
			}
			for _, pid := range tools {
				requireGone(t, "the sandboxed sleep after a SIGKILL of the plugin", pid, 10*time.Second)
			}
			for _, pid := range tree {
				requireGone(t, "a process of the plugin's tree after its SIGKILL", pid, 10*time.Second)
			}
			requireGone(t, "the plugin", plugins[0], 10*time.Second)
			p.wait()
			if mech != "landlock" {
				return
			}
			// The reaper went with the plugin's tree; the next launch
			// sweeps the dead plugin's private temp dir.
			res := w.runEnv([]string{force}, "--backend", "scripted", "--dir", w.work, "--sandbox", "workspace", "--prompt", "lines echo next\n")
			if res.code != 0 {
				t.Fatalf("the next run: %v", res)
			}
			if left, _ := filepath.Glob(filepath.Join(w.tmp, "avenor-sandbox-*")); len(left) > 0 {
				t.Errorf("private temp dirs left after the next run: %v", left)
			}
		})
	}
}

// pidsWithArg lists the live processes one of whose arguments is arg.
func pidsWithArg(arg string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || processGone(pid) {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// descendants lists pid's live descendants.
func descendants(pid int) []int {
	var out []int
	for _, c := range childrenOf(pid, "") {
		out = append(out, c)
		out = append(out, descendants(c)...)
	}
	return out
}

// TestBackendsSandboxMechanisms: `avenor backends` names the sandbox
// mechanisms usable here under its table, and --json gives the rows of
// sandbox-capable backends sandbox_mechanisms (only those rows); with
// neither usable the line says so and how to get one.
func TestBackendsSandboxMechanisms(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	w := newWorld(t)
	res := w.run("backends")
	if res.code != 0 || !strings.Contains(res.stdout, "\nsandbox mechanisms: ") || !strings.Contains(res.stdout, "landlock (ABI ") {
		t.Fatalf("backends: %v", res)
	}
	res = w.run("backends", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("%v: %v", err, res)
	}
	for _, r := range rows {
		mechs, has := r["sandbox_mechanisms"].([]any)
		caps, _ := r["capabilities"].(map[string]any)
		capable := caps["sandbox"] != nil && caps["sandbox"] != "unsupported"
		if has != capable {
			t.Errorf("%v: sandbox_mechanisms %v with capability sandbox %v", r["backend"], r["sandbox_mechanisms"], caps["sandbox"])
		}
		if r["backend"] == "scripted" && (len(mechs) == 0 || mechs[len(mechs)-1] != "landlock") {
			t.Errorf("scripted: sandbox_mechanisms %v, want landlock last", mechs)
		}
	}
	empty := w.path("emptybin")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	res = w.runEnv([]string{"PATH=" + empty, disableLandlock}, "backends")
	want := "sandbox mechanisms: none usable here: bubblewrap (bwrap not found in PATH), landlock (disabled by AVENOR_SANDBOX_DISABLE_LANDLOCK=1); install bubblewrap"
	if res.code != 0 || !strings.Contains(res.stdout, want) {
		t.Errorf("backends with neither: want %q in %v", want, res)
	}
}

// TestSandboxLandlockDeniedEvents: under Landlock forced, a tool's write
// outside --dir and its read of a planted key are each an
// avenor.sandbox.denied event, as under bubblewrap.
func TestSandboxLandlockDeniedEvents(t *testing.T) {
	t.Parallel()
	requireLandlock(t)
	evs := deniedRun(t, newWorld(t), forceLandlock)
	if start := only(evs, "session.start"); len(start) != 1 || !equalJSON(start[0]["sandbox"], map[string]any{"mechanism": "landlock", "profile": "workspace", "network": "host"}) {
		t.Errorf("session.start %v; want landlock", start)
	}
}
