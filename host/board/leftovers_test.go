package board

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// An ended supervisor's lock files and tombstone are removed once old; a
// live supervisor's, a fresh tombstone and a stale socket's neighbours
// held by a lock stay.
func TestRemoveLeftovers(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// ended: no socket; stale: a socket nothing listens on; live: one that
	// answers.
	var endedFiles []string
	for _, suf := range leftoverSuffixes {
		endedFiles = append(endedFiles, touch("ended.sock"+suf))
	}
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	staleDead := touch("stale.sock.dead")
	live := filepath.Join(dir, "live.sock")
	lln, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer lln.Close()
	liveFiles := []string{touch("live.sock.control.lock"), touch("live.sock.dead")}
	other := touch("notes.dead")

	// Nothing is old enough yet; a stale socket goes at once (nothing
	// listens: the control server removes it as well).
	if got := removeLeftovers(dir, time.Now().Add(-time.Hour)); !slices.Equal(got, []string{stale}) {
		t.Fatalf("removed fresh files: %v", got)
	}
	got := removeLeftovers(dir, time.Now().Add(time.Second))
	want := append(slices.Clone(endedFiles), staleDead)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("removed %v;\nwant %v", got, want)
	}
	for _, p := range append(liveFiles, other, live) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
