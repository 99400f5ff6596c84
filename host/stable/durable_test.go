package stable

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// TestFullDiskRefusesWhatCannotBeDurable: while state.json cannot be
// written (ENOSPC), a spawn is refused — no runtime listed, no plugin
// started — and so is a follow-up prompt to a parked runtime, which stays
// idle with its one run; once the disk has room again both work, and every
// runtime that ran is in state.json, so a successor would end it (its
// session.end and sentinel) rather than lose it. Spawns used to be
// accepted on a full disk, and 8 of 16 runtimes vanished after a kill and
// restart.
func TestFullDiskRefusesWhatCannotBeDurable(t *testing.T) {
	dir, err := os.MkdirTemp("", "avd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var launches atomic.Int32
	sock := filepath.Join(dir, "s.sock")
	stateDir := StateDirFor(filepath.Join(dir, "state"), sock)
	sup, c, served := serveInProcess(t, Config{SocketPath: sock, TempDir: dir, Home: dir, StateDir: stateDir, Resolve: inProcess(&launches)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var full atomic.Bool
	sup.waitRecovered()
	st := sup.store.(*stateStore)
	st.mu.Lock()
	st.write = func(path string, data []byte, perm os.FileMode) error {
		if full.Load() {
			return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return safefile.WriteFile(path, data, perm)
	}
	st.mu.Unlock()
	parked := func(id string) client.Runtime {
		t.Helper()
		for {
			rt, err := c.Runtime(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rt.Parked {
				return rt
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "state file could not be written") || !strings.Contains(err.Error(), "no space left on device") ||
			!strings.Contains(err.Error(), "free space") {
			t.Fatalf("%s on a full disk: %v, want a refusal naming the state file, the error and the fix", what, err)
		}
	}

	full.Store(true)
	_, err = c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say lost"})
	refused("spawn", err)
	if list, err := c.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after a refused spawn: %v %+v", err, list)
	}
	if n := launches.Load(); n != 0 {
		t.Fatalf("a refused spawn started %d plugins", n)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "avenor-stable", "*", "*")); len(left) != 0 {
		t.Fatalf("a refused spawn left %v", left)
	}

	full.Store(false)
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say one"})
	if err != nil {
		t.Fatal(err)
	}
	parked(sp.RuntimeID)
	full.Store(true)
	refused("follow-up", c.Prompt(ctx, "say two", sp.RuntimeID))
	rt := parked(sp.RuntimeID)
	var extra struct {
		Runs int `json:"runs"`
	}
	_ = json.Unmarshal(rt.Raw, &extra)
	if rt.Status != StatusIdle || extra.Runs != 1 || rt.FinalOutput != "one" {
		t.Fatalf("after a refused follow-up: %s", rt.Raw)
	}

	full.Store(false)
	if err := c.Prompt(ctx, "say two", sp.RuntimeID); err != nil {
		t.Fatalf("follow-up once the disk has room: %v", err)
	}
	for parked(sp.RuntimeID).FinalOutput != "two" {
		time.Sleep(10 * time.Millisecond)
	}
	state, ok, err := sup.store.load()
	if err != nil || !ok || len(state.Runtimes) != 1 || state.Runtimes[0].ID != sp.RuntimeID {
		t.Fatalf("state.json: %v %v %+v", ok, err, state.Runtimes)
	}
	_ = c.Shutdown(ctx, "")
	<-served
}
