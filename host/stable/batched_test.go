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

// A parked stable runtime's writer still reaches its log (closed while
// parked, reopened for the write).
func TestParkedRuntimeWrites(t *testing.T) {
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
	// Its writer is its host/run runtime's (TestStableRuntimeWriterIsBatched
	// there blocks the log): a line written now reaches the log.
	if _, err := rt.run.Events().Write(event.Event{"event": "test.marker"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.run.Events().Flush(); err != nil {
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
