package claudecode

import (
	"os"
	"os/exec"
	"testing"
)

// TestProcessLive: a running process is live on every OS (without /proc, as
// on macOS, the Linux check took every process for dead), and a reaped one
// is not.
func TestProcessLive(t *testing.T) {
	if !processLive(os.Getpid()) {
		t.Fatalf("processLive(self) = false, want true")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if processLive(cmd.Process.Pid) {
		t.Fatalf("processLive(reaped child %d) = true, want false", cmd.Process.Pid)
	}
}
