//go:build reliability

package hosttest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// needRootToMount skips a test that mounts a file system where it cannot,
// and fails it instead when AVENOR_REQUIRE_ROOT says the machine must.
func needRootToMount(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "needs root to mount a small tmpfs"
	} else if _, err := exec.LookPath("mount"); err != nil {
		why = "needs mount: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
		t.Fatalf("%s, and AVENOR_REQUIRE_ROOT is set", why)
	}
	t.Skip(why)
}

// TestReliabilityStableFullDisk: avenor stable's state directory is on a
// 1 MiB tmpfs that fills up. A spawn is then refused with an error naming
// the state file and ENOSPC, nothing of it runs and no runtime is listed;
// a follow-up prompt to a parked runtime is refused too, and the runtime
// stays idle. After kill -9 and a restart with room again, every runtime
// that ran is back with its session.end and sentinel, and spawns are taken. Spawns used to be
// accepted on a full disk: after kill -9 and restart 8 of 16 runtimes had
// vanished, without a session.end or a sentinel, ever.
func TestReliabilityStableFullDisk(t *testing.T) {
	needRootToMount(t)
	w := newWorld(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "avenor-full", w.state).CombinedOutput(); err != nil {
		if os.Getenv("AVENOR_REQUIRE_ROOT") != "" {
			t.Fatalf("mount -t tmpfs: %v %s", err, out)
		}
		t.Skipf("mount -t tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", w.state).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", w.state, err, out)
		}
	})
	s := w.startStable("full", nil)
	c := s.client()
	first := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say one"})
	waitEnded(t, c, first.RuntimeID, 15*time.Second)

	// Fill the state file system.
	filler, err := os.Create(filepath.Join(w.state, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := filler.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	filler.Close()

	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "state file could not be written") || !strings.Contains(err.Error(), "no space left on device") {
			t.Fatalf("%s on a full disk: %v, want a refusal naming the state file and ENOSPC", what, err)
		}
	}
	for i := range 4 {
		_, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say lost"})
		refused("spawn "+string(rune('1'+i)), err)
	}
	refused("follow-up", c.Prompt(ctxT(t, 30*time.Second), "say two", first.RuntimeID))
	list, err := c.List(ctxT(t, 10*time.Second))
	if err != nil || len(list) != 1 || list[0].Status != "idle" {
		t.Fatalf("after the refusals: %v %+v", err, list)
	}

	// kill -9, room again, restart: the runtime that ran is back, whole.
	s.signal(syscall.SIGKILL)
	s.wait()
	if err := os.Remove(filepath.Join(w.state, "filler")); err != nil {
		t.Fatal(err)
	}
	s2 := w.startStable("full", nil)
	c2 := s2.client()
	list, err = c2.List(ctxT(t, 30*time.Second))
	if err != nil || len(list) != 1 || list[0].RuntimeID != first.RuntimeID {
		t.Fatalf("after the restart: %v %+v", err, list)
	}
	rt := list[0]
	checkStream(t, rt.OnEvent, rt.RuntimeID)
	checkSentinel(t, rt.SentinelFile, sentinelBytes("DONE", rt.SessionID, "end_turn", 0, rt.RunID))
	// With room again, spawns are taken.
	sp := spawn(t, c2, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say three"})
	if rt := waitEnded(t, c2, sp.RuntimeID, 15*time.Second); rt.Status != "idle" || rt.FinalOutput != "three" {
		t.Fatalf("a spawn with room again: %s", rt.Raw)
	}
	s2.signal(syscall.SIGTERM)
	s2.wait()
}
