//go:build reliability

package hosttest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nodeMarkEnv names the variable each node of a test is started with, so
// the processes it started (plugins, their runtimes) can be found in /proc.
const nodeMarkEnv = "AVENOR_TEST_NODE_MARK"

// markedProcs lists the pids whose environment holds mark as nodeMarkEnv,
// with their command lines.
func markedProcs(mark string) map[int]string {
	want := []byte(nodeMarkEnv + "=" + mark + "\x00")
	out := map[int]string{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if strings.HasPrefix(procState(pid), "Z") {
			continue // a zombie holds no resources; its parent reaps it
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		out[pid] = strings.ReplaceAll(string(cmd), "\x00", " ")
	}
	return out
}

// requireNoMarked waits until no process carries mark, or fails listing
// the orphans.
func requireNoMarked(t *testing.T, mark string, d time.Duration) {
	t.Helper()
	var left map[int]string
	if !waitFor(d, func() bool { left = markedProcs(mark); return len(left) == 0 }) {
		t.Errorf("processes of the killed node still run %v later: %v", d, left)
	}
}
