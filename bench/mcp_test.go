package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPStatus is the latency of one avenor_status tool call, from
// the go-sdk MCP client over stdio through `avenor mcp` to its supervisor
// and back, for a run the supervisor holds (the call an orchestrating agent
// polls with). It reports p50 and p99 of the calls.
func BenchmarkMCPStatus(b *testing.B) {
	for _, view := range []string{"full", "lifecycle"} {
		b.Run(view, func(b *testing.B) { benchMCPStatus(b, view) })
	}
}

func benchMCPStatus(b *testing.B, view string) {
	root, err := os.MkdirTemp("", "avmcp")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(root)
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(root, "sup.sock")
	cmd := exec.Command(avenorBinary(b), "mcp", "--control-socket", sock)
	cmd.Env = []string{"HOME=" + root, "TMPDIR=" + root, "XDG_CONFIG_HOME=" + root + "/c", "XDG_STATE_HOME=" + root + "/s",
		"XDG_DATA_HOME=" + root + "/d", "AVENOR_PLUGIN_PATH=" + binDir, "PATH=/usr/bin:/bin"}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", name, err, res)
		}
		out, _ := res.StructuredContent.(map[string]any)
		return out
	}
	defer call("avenor_shutdown", map[string]any{})
	sp := call("avenor_spawn", map[string]any{"repo_dir": work, "backend": "echo", "prompt": "hello"})
	runID := sp["run_id"].(string)
	call("avenor_result", map[string]any{"run_id": runID, "timeout": "60s"})
	args := map[string]any{"run_id": runID, "view": view}
	call("avenor_status", args) // warm
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		call("avenor_status", args)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
