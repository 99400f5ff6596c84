//go:build reliability

package hosttest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// `avenor stable` runs a project's pinned plugins exactly
// as `avenor run` does, and what runs is what was hashed.

// pinWorld is a world whose project (w.work) pins the scripted plugin to
// its own copy, which differs in bytes from the scripted plugin on
// AVENOR_PLUGIN_PATH: which one ran shows in the plugin process's hash.
type pinWorld struct {
	*world
	bin  string // the pinned binary
	hash string // its pinned hash
	orig string // the scripted plugin AVENOR_PLUGIN_PATH finds
}

func newPinWorld(t *testing.T) *pinWorld {
	t.Helper()
	w := newWorld(t)
	orig, err := os.Readlink(filepath.Join(bins.pluginDir, "avenor-plugin-scripted"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(w.root, "pinned", "avenor-plugin-scripted")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyExecutable(orig, bin); err != nil {
		t.Fatal(err)
	}
	appendTo(t, bin, "\npinned build\n") // an ELF runs with bytes after its end
	if err := os.MkdirAll(filepath.Join(w.work, ".avenor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res := w.run("plugin", "use", "--path", bin, "scripted"); res.code != 0 {
		t.Fatalf("plugin use: %v", res)
	}
	return &pinWorld{world: w, bin: bin, hash: fileSHA(t, bin), orig: orig}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// fileSHA is "sha256:<hex>" of a file (of /proc/<pid>/exe: what a process
// runs, even once its file is gone).
func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TestReliabilityStablePinnedPlugin: a stable spawn in a project whose lock
// pins the scripted plugin runs exactly the pinned binary, not the one on
// AVENOR_PLUGIN_PATH; once the pinned binary changes, the spawn is refused
// with the very message `avenor run` gives, and nothing runs.
func TestReliabilityStablePinnedPlugin(t *testing.T) {
	w := newPinWorld(t)
	s := w.startStable("pin", nil, "--parked-timeout", "0")
	c := s.client()
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say pinned"})
	rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
	if rt.PluginPID == 0 {
		t.Fatalf("the parked runtime kept no plugin: %s", rt.Raw)
	}
	if got := fileSHA(t, fmt.Sprintf("/proc/%d/exe", rt.PluginPID)); got != w.hash {
		t.Fatalf("the spawn ran a plugin with hash %s, not the pinned binary (%s); the unpinned one is %s", got, w.hash, fileSHA(t, w.orig))
	}
	// It runs from a verified copy, under its own name, and the copy is gone.
	if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rt.PluginPID)); !strings.HasPrefix(string(argv), w.bin+"\x00") {
		t.Errorf("the pinned plugin's argv[0] is %q, want %s", strings.Split(string(argv), "\x00")[0], w.bin)
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", rt.PluginPID)); !strings.HasPrefix("avenor-plugin-scripted", strings.TrimSpace(string(comm))) {
		t.Errorf("the pinned plugin's process is named %q", comm)
	}
	if left := listTree(t, w.tmp); strings.Contains(strings.Join(left, " "), "verified") {
		t.Errorf("a verified copy is left in TMPDIR: %v", left)
	}

	appendTo(t, w.bin, "tampered")
	marker := filepath.Join(w.root, "ran")
	_, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "shell touch " + marker})
	if err == nil {
		t.Fatal("a stable spawn with a tampered pinned plugin was accepted")
	}
	msg := rpcError(t, err).Message
	res := w.run("--backend", "scripted", "--dir", w.work, "--prompt", "shell touch "+marker)
	if res.code == 0 {
		t.Fatalf("avenor run with the tampered pin: %v", res)
	}
	if want := "avenor: " + msg + "\n"; !strings.Contains(res.stderr, want) {
		t.Errorf("the spawn's refusal differs from avenor run's:\nspawn: %q\n  run: %q", msg, res.stderr)
	}
	for _, want := range []string{"does not match its pin", w.hash, "plugins.lock"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the tampered plugin (or another binary) ran")
	}
}

// TestReliabilityStablePinnedSwapRace: while the pinned binary is swapped,
// again and again, between the pinned build and a script that would mark
// that it ran, many spawns either run the pinned build or are refused; the
// script never runs. Checking the path's hash and then executing the path
// ran the swapped-in binary (4 times in 150).
func TestReliabilityStablePinnedSwapRace(t *testing.T) {
	w := newPinWorld(t)
	good := filepath.Join(w.root, "pinned", "good")
	if err := os.Link(w.bin, good); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(w.root, "unpinned-ran")
	bad := filepath.Join(w.root, "pinned", "bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\ntouch "+marker+"\nexec "+w.orig+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := w.startStable("race", nil, "--parked-timeout", "0")
	c := s.client()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	swaps := 0
	go func() {
		defer wg.Done()
		tmp := w.bin + ".swap"
		for i := 0; ; i++ {
			select {
			case <-stop:
				_ = os.Remove(tmp)
				return
			default:
			}
			src := good
			if i%2 == 1 {
				src = bad
			}
			_ = os.Remove(tmp)
			if err := os.Link(src, tmp); err == nil && os.Rename(tmp, w.bin) == nil {
				swaps++
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	const n = 150
	ran, refused := 0, 0
	for i := 0; i < n; i++ {
		sp, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi"})
		if err != nil {
			if !strings.Contains(err.Error(), "does not match its pin") {
				t.Errorf("spawn %d: %v", i, err)
			}
			refused++
			continue
		}
		rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		if rt.ExitCode != nil && *rt.ExitCode == 0 {
			ran++
		} else if msgs := fmt.Sprint(only(readEvents(t, sp.OnEvent), "avenor.error")); !strings.Contains(msgs, "does not match its pin") {
			t.Errorf("spawn %d failed, not for its pin: %s", i, msgs)
		}
		if _, err := os.Stat(marker); err == nil {
			close(stop)
			wg.Wait()
			t.Fatalf("the swapped-in, unpinned binary ran (spawn %d of %d)", i+1, n)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d spawns while the binary was swapped %d times: %d ran the pinned build, %d were refused", n, swaps, ran, refused)
	if ran == 0 {
		t.Error("no spawn ran: the test checked nothing")
	}
}
