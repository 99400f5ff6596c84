package stable

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/event"
	hostrun "github.com/avenor-go/avenor/host/run"
)

// TestParkedRuntimeKeepsFinalOutputBounded: a parked runtime whose turn
// answered 1 MiB keeps at most hostrun.MaxKeptFinalOutput runes of it in memory —
// in its last session.end and in its history — while
// status shows the first 4096 runes with final_output_truncated and result
// still answers the whole text, read back from the log. Once reaped, the
// runtime is in no table of the supervisor. Parked runtimes used to keep
// every answer whole: 60 answers of 1 MB took a supervisor from 23 MB to
// 1.36 GB.
func TestParkedRuntimeKeepsFinalOutputBounded(t *testing.T) {
	dir, err := os.MkdirTemp("", "avm")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var launches atomic.Int32
	sup, c, served := serveInProcess(t, Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Home: dir,
		Resolve: inProcess(&launches), ParkedTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const size = 1 << 20
	// One chunk of 1 MiB, then a tool call and the answer of 1 MiB: the
	// answer is what comes after the last tool call.
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir,
		Prompt: "shell head -c 1048576 /dev/zero | tr '\\0' y\ntool look\nshell head -c 1048576 /dev/zero | tr '\\0' x"})
	if err != nil {
		t.Fatal(err)
	}
	var rt client.Runtime
	for {
		if rt, err = c.Runtime(ctx, sp.RuntimeID); err != nil {
			t.Fatal(err)
		}
		if rt.Parked {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rt.Status != StatusIdle || utf8.RuneCountInString(rt.FinalOutput) != event.FinalOutputLimit || !rt.FinalOutputTruncated {
		t.Fatalf("status: %d runes of final_output, truncated %v (want %d, true): %.300s", utf8.RuneCountInString(rt.FinalOutput), rt.FinalOutputTruncated, event.FinalOutputLimit, rt.Raw)
	}
	whole, err := c.Result(ctx, sp.RuntimeID)
	if err != nil || whole != strings.Repeat("x", size) {
		t.Fatalf("result: %d bytes (%v), want the whole %d-byte answer", len(whole), err, size)
	}

	sup.mu.Lock()
	r := sup.runtimes[sp.RuntimeID]
	sup.mu.Unlock()
	end, _ := r.run.LastEnd()
	kept, _ := end["final_output"].(string)
	if n := utf8.RuneCountInString(kept); n > hostrun.MaxKeptFinalOutput {
		t.Errorf("the runtime keeps a final_output of %d runes in memory, want at most %d", n, hostrun.MaxKeptFinalOutput)
	}
	for _, ev := range r.run.Events().History(0, 0) {
		if f, _ := ev["final_output"].(string); utf8.RuneCountInString(f) > hostrun.MaxKeptFinalOutput {
			t.Errorf("its history keeps a %s with a final_output of %d runes", ev.Type(), utf8.RuneCountInString(f))
		}
	}

	// Reaped: in no table any more, so nothing keeps its memory.
	deadline := time.Now().Add(10 * time.Second)
	for {
		sup.mu.Lock()
		_, listed := sup.runtimes[sp.RuntimeID]
		keeping := false
		for _, k := range sup.kept {
			keeping = keeping || k.rt == r
		}
		sup.mu.Unlock()
		if !listed && !keeping {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reaped: listed %v, kept %v", listed, keeping)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = c.Shutdown(ctx, "")
	<-served
}
