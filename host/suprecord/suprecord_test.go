package suprecord

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A record is listed while its process runs, removed by its remove func,
// and a record of a dead process is dropped (and deleted) by List.
func TestRegisterList(t *testing.T) {
	state := t.TempDir()
	remove, err := Register(state, Record{Socket: "/s/a.sock", RunID: "run-a"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(Dir(state)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("records dir %v %v; want 0700", fi, err)
	}
	got := List(state)
	if len(got) != 1 || got[0].Socket != "/s/a.sock" || got[0].PID != os.Getpid() || got[0].RunID != "run-a" {
		t.Fatalf("List = %+v", got)
	}

	// A supervisor that was SIGKILLed left its record.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	if _, err := Register(state, Record{Socket: "/s/dead.sock", PID: dead}); err != nil {
		t.Fatal(err)
	}
	if got := List(state); len(got) != 1 || got[0].Socket != "/s/a.sock" {
		t.Fatalf("List with a dead supervisor's record = %+v; want only the live one", got)
	}
	if _, err := os.Stat(filepath.Join(Dir(state), strconv.Itoa(dead)+".json")); !os.IsNotExist(err) {
		t.Errorf("the dead supervisor's record stayed: %v", err)
	}

	// Junk beside the records is ignored.
	os.WriteFile(filepath.Join(Dir(state), "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(Dir(state), "1.json"), []byte("{not json"), 0o600)
	remove()
	if got := List(state); len(got) != 0 {
		t.Fatalf("List after remove = %+v", got)
	}
}
