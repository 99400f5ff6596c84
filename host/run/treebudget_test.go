package run

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTreeBudget(t *testing.T) {
	full := func(capacity, active int) error { return fmt.Errorf("tree budget (%d) reached", capacity) }
	home := t.TempDir()
	now := time.Now
	root := OpenTreeBudget("", home, "rootrun", 2, now)
	if root.mode != BudgetActive || !strings.HasPrefix(root.Path(), filepath.Join(home, ".avenor", "sockets", "tree-budget-")) {
		t.Fatalf("root: %+v", root)
	}
	nested := OpenTreeBudget(root.Path(), "", "nestedrun", 99, now)
	if nested.mode != BudgetActive || nested.rootID != "rootrun" || nested.capacity != 2 {
		t.Fatalf("nested: %+v", nested)
	}
	if err := root.Reserve("rt_1", full); err != nil {
		t.Fatal(err)
	}
	if err := nested.Reserve("rt_1", full); err != nil {
		t.Fatal(err)
	}
	if err := root.Reserve("rt_2", full); err == nil || !strings.Contains(err.Error(), "tree budget (2) reached") {
		t.Fatalf("full tree: %v", err)
	}
	nested.Release("rt_1")
	if info := root.Info(0, 16); info["active"] != 1 || info["root_id"] != "rootrun" {
		t.Fatalf("info %v", info)
	}
	// A reservation of a dead process is reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	err := root.locked(func(f *budgetFile) (bool, error) {
		f.Reservations = append(f.Reservations, reservation{PID: dead, Supervisor: "gone", RuntimeID: "rt_9"})
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := root.Reserve("rt_2", full); err != nil {
		t.Fatalf("after reaping: %v", err)
	}
	nested.Close()
	root.Close()
	if _, err := os.Stat(root.path); !os.IsNotExist(err) {
		t.Fatalf("the root left its file: %v", err)
	}
	if d := OpenTreeBudget("", "", "x", 2, now); d.mode != BudgetDegraded || d.Reserve("rt_1", full) != nil {
		t.Fatalf("no home: %+v", d)
	}
	if d := OpenTreeBudget(filepath.Join(home, "missing"), "", "x", 2, now); d.mode != BudgetDegraded || !strings.Contains(d.reason, EnvTreeBudget) {
		t.Fatalf("bad inherited file: %+v", d)
	}
}
