package hosttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantSecret makes $HOME/.ssh/id_test under a home beyond /tmp, and a
// directory "outside" beside it; it returns home, the key and outside.
func plantSecret(t *testing.T) (home, secret, outside string) {
	t.Helper()
	beyond := beyondTmp(t)
	home, outside = filepath.Join(beyond, "home"), filepath.Join(beyond, "outside")
	secret = filepath.Join(home, ".ssh", "id_test")
	for _, d := range []string{outside, filepath.Dir(secret)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("PLANTED-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, secret, outside
}

// denialScript is three tool calls: a write in --dir, one outside it,
// a read of the planted key.
func denialScript(outside, secret string) string {
	return "toolsh echo in > in.txt && echo in-ok\n" +
		"toolsh touch " + outside + "/out.txt\n" +
		"toolsh cat " + secret + "\n"
}

// TestSandboxDeniedEvents: a tool's write outside --dir and its read of a
// planted key are each an avenor.sandbox.denied event naming the op, the
// path and the tool call, right after the tool.call_update that showed
// it; the write in --dir is none; the turn completes.
func TestSandboxDeniedEvents(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	evs := deniedRun(t, w)
	if _, err := os.Stat(filepath.Join(w.work, "in.txt")); err != nil {
		t.Errorf("the write in --dir did not land: %v", err)
	}
	if end := only(evs, "session.end"); len(end) != 1 || end[0].str("stop_reason") != "end_turn" {
		t.Errorf("session.end %v; want the turn completed", end)
	}
}

// deniedRun runs denialScript under --sandbox workspace with a planted
// key as $HOME's (and env), checks its denials (checkDenials) and returns
// its events.
func deniedRun(t *testing.T, w *world, env ...string) []event {
	t.Helper()
	home, secret, outside := plantSecret(t)
	evPath := w.path("events.ndjson")
	res := w.runEnv(append([]string{"HOME=" + home}, env...), "--backend", "scripted", "--dir", w.work, "--prompt", denialScript(outside, secret),
		"--sandbox", "workspace", "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	checkDenials(t, evs, outside+"/out.txt", secret)
	return evs
}

// checkDenials: exactly a write of wrote and a read of read were denied,
// each by the tool call whose update comes right before it.
func checkDenials(t *testing.T, evs []event, wrote, read string) {
	t.Helper()
	want := map[string]string{"write": wrote, "read": read}
	denied := only(evs, "avenor.sandbox.denied")
	if len(denied) != len(want) {
		t.Fatalf("denied events %v; want one write of %s and one read of %s", denied, wrote, read)
	}
	for i, ev := range evs {
		if ev.name() != "avenor.sandbox.denied" {
			continue
		}
		op, path := ev.str("op"), ev.str("path")
		if want[op] != path {
			t.Errorf("denied %s %s; want %v", op, path, want)
		}
		prev := evs[i-1]
		if prev.name() != "tool.call_update" || prev.str("toolCallId") != ev.str("tool") || ev.str("tool") == "" {
			t.Errorf("denied %s %s (tool %q) follows %v; want the update of its tool call", op, path, ev.str("tool"), prev)
		}
	}
}

// TestSandboxOffNoDenials: the same tools without a sandbox write and read
// where they always could, and the stream has no avenor.sandbox.denied.
func TestSandboxOffNoDenials(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	home, secret, outside := plantSecret(t)
	evPath := w.path("events.ndjson")
	res := w.runEnv([]string{"HOME=" + home}, "--backend", "scripted", "--dir", w.work, "--prompt", denialScript(outside, secret)+
		"toolsh touch /proc/nope/x\n", "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	if d := only(evs, "avenor.sandbox.denied"); len(d) != 0 {
		t.Errorf("an unsandboxed run has denied events: %v", d)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err != nil {
		t.Errorf("the write outside --dir failed without a sandbox: %v", err)
	}
}

// TestSandboxLaunchDenied: bubblewrap that passes the machine check but
// cannot set the boundary up for the runtime is a launch denial naming
// the path it failed on; nothing runs outside the boundary.
func TestSandboxLaunchDenied(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	bin := w.path("fakebin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The trial run succeeds; any real launch fails as bwrap does when a
	// bind source vanished.
	fake := "#!/bin/sh\ncase \"$*\" in *'--ro-bind / / true') exit 0;; esac\n" +
		"echo 'bwrap: Can'\"'\"'t find source path /srv/vanished: No such file or directory' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	evPath := w.path("events.ndjson")
	ran := w.path("ran")
	res := w.runEnv([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), forceBwrap}, "--backend", "scripted", "--dir", w.work,
		"--prompt", "toolsh touch "+ran+"\n", "--sandbox", "workspace", "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	denied := only(evs, "avenor.sandbox.denied")
	if len(denied) != 1 || denied[0].str("op") != "launch" || denied[0].str("path") != "/srv/vanished" ||
		!strings.HasPrefix(denied[0].str("message"), "bwrap: Can't find source path") {
		t.Errorf("denied events %v; want one launch denial of /srv/vanished", denied)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the tool ran although its sandbox could not be set up")
	}
}
