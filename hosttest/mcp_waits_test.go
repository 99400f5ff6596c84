package hosttest

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMCPParallelWaitsShareAConnection: 150 avenor_status waits at once on
// one `avenor mcp` hold no control connection each (the supervisor takes
// 128): `avenor control list` still gets through while they wait, and a
// cancel ends every one of them.
func TestMCPParallelWaitsShareAConnection(t *testing.T) {
	w, sock := mcpWorld(t)
	m := startMCP(t, w, sock)
	sp := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "echo", "prompt": strings.Repeat("word ", 3000)})
	runID := sp["run_id"].(string)

	const waits = 150
	type outcome struct {
		status string
		err    string
	}
	results := make(chan outcome, waits)
	var started sync.WaitGroup
	for range waits {
		started.Add(1)
		go func() {
			started.Done()
			out, isErr, text := callTool(t, m.cs, "avenor_status", map[string]any{"run_id": runID, "wait_for": "terminal", "timeout": 60})
			if isErr {
				results <- outcome{err: text}
				return
			}
			s, _ := out["status"].(string)
			results <- outcome{status: s}
		}()
	}
	started.Wait()
	time.Sleep(2 * time.Second) // every wait is in the server by now

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.avenor, "control", "--socket", sock, "list")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), sp["runtime_id"].(string)) {
		t.Errorf("avenor control list while %d waits are open: %v\n%s", waits, err, out)
	}

	m.call("avenor_cancel", map[string]any{"run_id": runID})
	deadline := time.After(30 * time.Second)
	for i := range waits {
		select {
		case o := <-results:
			if o.err != "" || o.status != "killed" {
				t.Errorf("wait %d: status %q, error %q; want killed", i, o.status, o.err)
			}
		case <-deadline:
			t.Fatalf("only %d of %d waits ended within 30 s of the cancel", i, waits)
		}
	}
	// The spawn started a supervisor; it must not outlive the test.
	m.call("avenor_shutdown", map[string]any{})
	assertSupervisorGone(t, sock)
}
