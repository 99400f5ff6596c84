//go:build reliability

package hosttest

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// floodPrompt streams events as fast as the plugin can send them.
const floodPrompt = "flood 20000"

// TestReliabilityBatchedWriterHostKill: one-shot, loop, team and
// stable runtimes write through the batched writer; a host SIGKILL in the
// middle of a flood tears no line of their logs (the crash matrix's
// checkNoTornLine), RELIABILITY_TRIALS times each at a random moment —
// except the one thing no write(2) can keep whole: the kernel gives up a
// write at a page boundary when the writer is killed, so a line that
// straddles one may end the log cut exactly there (with one write per line
// as much as with batches; host/event writes a batch page by page, so that
// nothing else can be cut).
func TestReliabilityBatchedWriterHostKill(t *testing.T) {
	rng, _ := seededRNG(t)
	n := trials()
	for _, kind := range []string{"run", "loop", "team", "stable"} {
		for i := 0; i < n; i++ {
			delay := time.Duration(rng.IntN(200)) * time.Millisecond
			t.Run(fmt.Sprintf("%s/%03d", kind, i), func(t *testing.T) {
				t.Parallel()
				t.Logf("host SIGKILL %v into the flood", delay)
				w := newWorld(t)
				log := w.path("events.ndjson")
				var p *proc
				switch kind {
				case "run":
					p = w.start(nil, "--backend", "scripted", "--dir", w.work, "--prompt", floodPrompt, "--on-event", log)
				case "loop":
					cfg := w.writeFile("loop.json", `{"max_iterations": 1, "loop": [{"name": "flood", "prompt": "`+floodPrompt+`"}]}`)
					p = w.start(nil, "--backend", "scripted", "--dir", w.work, "--loop-file", cfg, "--on-event", log)
				case "team":
					cfg := w.writeFile("team.json", `{"team": [{"name": "a", "prompt": "`+floodPrompt+`"}, {"name": "b", "prompt": "`+floodPrompt+`"}]}`)
					p = w.start(nil, "--backend", "scripted", "--dir", w.work, "--team-file", cfg, "--on-event", log)
				case "stable":
					s := w.startStable("fl", nil)
					p = s.proc
					spawn(t, s.client(), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: floodPrompt, OnEvent: log})
				}
				waitForLog(t, log, `"event":"agent.message_chunk"`, 20*time.Second)
				time.Sleep(delay)
				_ = syscall.Kill(p.pid(), syscall.SIGKILL)
				p.wait()
				if st, err := os.Stat(log); err != nil || st.Size() == 0 {
					t.Fatalf("no log to check: %v", err)
				}
				checkNoTornLineButAtAPage(t, log)
			})
		}
	}
}

// checkNoTornLineButAtAPage is checkNoTornLine, but a last line cut exactly
// at a page boundary of the file is the kernel's, not avenor's: it is
// logged, and every line before it must be whole.
func checkNoTornLineButAtAPage(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(data); n > 0 && data[n-1] != '\n' && n%os.Getpagesize() == 0 {
		i := bytes.LastIndexByte(data, '\n')
		t.Logf("the last line straddled a page boundary and was cut there by the kill (%d bytes, a write(2) property)", n-i-1)
		if err := os.WriteFile(path, data[:i+1], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkNoTornLine(t, path)
}
