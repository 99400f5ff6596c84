package plugin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// go-plugin gives each launched plugin a $TMPDIR/plugin-dir<random> for its
// socket and removes it when the plugin is killed; a host killed first
// leaves it for good. The directory cannot move (nesting it deeper would
// push the socket's path past the 108 bytes of a sockaddr_un), so the host
// marks it as its own with an empty file naming its pid, and the next
// avenor removes the marked directories of dead hosts.
const (
	// socketDirPrefix is go-plugin's name for the directory.
	socketDirPrefix = "plugin-dir"
	// socketDirMarker starts the marker's name: .avenor-host-<pid>.
	socketDirMarker = ".avenor-host-"
)

// markSocketDir leaves the marker in go-plugin's socket directory; a
// failure only means this directory cannot be cleaned up after a crash.
func markSocketDir(dir string, log hclog.Logger) {
	if dir == "" {
		return
	}
	f, err := safefile.Create(filepath.Join(dir, socketDirMarker+strconv.Itoa(os.Getpid())), 0o600)
	if err != nil {
		log.Debug("marking the plugin socket directory", "dir", dir, "error", err)
		return
	}
	f.Close()
}

// RemoveStaleSocketDirs removes the plugin socket directories that hosts
// killed before they could stop their plugins left in $TMPDIR: only this
// user's, only those marked by an avenor host (another program's
// plugin-dir* stays), and only when that host's pid no longer runs. It
// returns what it removed. A host calls it once at start.
func RemoveStaleSocketDirs() []string {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), socketDirPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if uid, ok := safefile.Owner(dir); !ok || uid != os.Geteuid() {
			continue
		}
		if stale(dir) {
			if os.RemoveAll(dir) == nil {
				removed = append(removed, dir)
			}
		}
	}
	return removed
}

// stale: dir is marked, and by no process that still runs. A plugin that
// lingers after its host died (linger.go) marks its directory too, so that
// the next host finds the socket to re-attach to.
func stale(dir string) bool {
	inner, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	marked := false
	for _, f := range inner {
		if s, ok := strings.CutPrefix(f.Name(), socketDirMarker); ok {
			pid, err := strconv.Atoi(s)
			if err != nil {
				continue
			}
			if pid == os.Getpid() || safefile.ProcessAlive(pid) {
				return false
			}
			marked = true
		}
	}
	return marked
}
