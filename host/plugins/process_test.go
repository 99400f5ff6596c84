package plugins

import (
	"os"
	"os/exec"
	"testing"
)

// TestProcessAlive: this process is alive under its own start time and
// not under another (a recycled pid); an exited child is dead.
func TestProcessAlive(t *testing.T) {
	pid := os.Getpid()
	start := ProcessStart(pid)
	if start == 0 {
		t.Fatal("no start time for this process (no /proc?)")
	}
	if !ProcessAlive(pid, start) || !ProcessAlive(pid, 0) {
		t.Fatal("this process reads as dead")
	}
	if ProcessAlive(pid, start+1) {
		t.Fatal("this process under another start time reads as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(cmd.Process.Pid, 0) {
		t.Fatal("an exited, reaped child reads as alive")
	}
	if ProcessAlive(0, 0) || ProcessAlive(-1, 0) {
		t.Fatal("pid <= 0 reads as alive")
	}
}
