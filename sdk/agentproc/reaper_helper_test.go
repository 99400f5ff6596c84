package agentproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const pluginHelperEnv = "AGENTPROC_TEST_PLUGIN_DIR"

// pluginHelper runs in a re-executed test binary that plays a plugin: it
// starts a CLI whose tool leaves for a session of its own, writes
// "<cli pid> <pgid> <tool pid>" to dir/pids and waits to be killed.
func pluginHelper(dir string) int {
	p, err := Start(context.Background(), Spec{Path: "/bin/sh", Args: []string{"-c",
		`setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 300`}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l := <-p.Lines()
	pids := fmt.Sprintf("%d %d %s", p.PID(), p.PGID(), l.Data)
	if err := os.WriteFile(filepath.Join(dir, "pids.tmp"), []byte(pids), 0o644); err != nil {
		return 1
	}
	_ = os.Rename(filepath.Join(dir, "pids.tmp"), filepath.Join(dir, "pids"))
	time.Sleep(time.Minute)
	return 0
}
