package stable

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/event"
)

// A stable runtime writes through the batched writer, as a one-shot run
// does: a Write returns once its line is queued, so a log that
// blocks (here: its lock held) holds up no runtime, and the line reaches
// the log once it unblocks.
func TestRuntimeWriterIsBatched(t *testing.T) {
	dir, err := os.MkdirTemp("", "avs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var launches atomic.Int32
	sup, c, served := serveInProcess(t, Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Home: dir, Resolve: inProcess(&launches)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	logPath := filepath.Join(dir, "ev.ndjson")
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say hi", OnEvent: logPath})
	if err != nil {
		t.Fatal(err)
	}
	for {
		rt, err := c.Runtime(ctx, sp.RuntimeID)
		if err != nil {
			t.Fatal(err)
		}
		if rt.Parked {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	sup.mu.Lock()
	rt := sup.runtimes[sp.RuntimeID]
	sup.mu.Unlock()

	rt.evlog.mu.Lock() // the log blocks
	wrote := make(chan error, 1)
	go func() {
		_, err := rt.w.Write(event.Event{"event": "test.marker"})
		wrote <- err
	}()
	select {
	case err := <-wrote:
		rt.evlog.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		rt.evlog.mu.Unlock()
		<-wrote
		t.Fatal("a runtime's Write waited for its blocked log: its writer is not batched")
	}
	if err := rt.w.Flush(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(logPath); !containsLine(data, `"event":"test.marker"`) {
		t.Fatalf("the queued line never reached the log:\n%s", data)
	}
	if err := c.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	<-served
}

func containsLine(data []byte, s string) bool {
	return strings.Contains(string(data), s+",") || strings.Contains(string(data), s+"}")
}
