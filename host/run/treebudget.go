package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// EnvTreeBudget names the inherited tree budget file (docs/configuration.md#other-environment-variables).
const EnvTreeBudget = "AVENOR_TREE_BUDGET"

// Tree budget modes (tree_budget's "mode").
const (
	BudgetActive   = "active"
	BudgetDegraded = "degraded"
)

// budgetFile is the tree budget file: the tree's capacity and one
// reservation per executing runtime of every supervisor in the tree.
type budgetFile struct {
	Version      int           `json:"version"`
	RootID       string        `json:"root_id"`
	RootPID      int           `json:"root_pid"`
	Capacity     int           `json:"capacity"`
	Reservations []reservation `json:"reservations"`
}

// reservation is one executing runtime. A reservation whose supervisor
// process is gone (or whose pid now names another process, told by its
// start time) is reaped by the next supervisor that reads the file.
type reservation struct {
	PID        int    `json:"pid"`
	Start      uint64 `json:"start,omitempty"`
	Supervisor string `json:"supervisor"`
	RuntimeID  string `json:"runtime_id"`
	At         int64  `json:"at"`
}

// TreeBudget is a supervisor's view of its tree's budget file (contract
// docs/stable.md#limits), kept beside the tree's spend ledgers: nested supervisors share it through
// AVENOR_TREE_BUDGET. Every read-modify-write of the file holds an flock on it. When the
// file cannot be created or used, the budget is degraded: only the local
// limit applies, and tree_budget says why.
type TreeBudget struct {
	now func() time.Time

	mu       sync.Mutex
	path     string
	root     bool // this supervisor created the file and removes it at exit
	rootID   string
	capacity int
	mode     string
	reason   string
	self     string // this supervisor's run id
	pid      int
	start    uint64
}

// OpenTreeBudget joins the tree of inherited (AVENOR_TREE_BUDGET), or
// creates a new tree's file in <home>/.avenor/sockets.
func OpenTreeBudget(inherited, home, runID string, capacity int, now func() time.Time) *TreeBudget {
	pid := os.Getpid()
	t := &TreeBudget{now: now, self: runID, pid: pid, start: plugins.ProcessStart(pid), capacity: capacity, rootID: runID, mode: BudgetActive}
	if inherited != "" {
		t.path = inherited
		err := t.locked(func(f *budgetFile) (bool, error) {
			t.rootID, t.capacity = f.RootID, f.Capacity
			return false, nil
		})
		if err != nil {
			t.degrade(fmt.Sprintf("%s=%s: %v", EnvTreeBudget, inherited, err))
		}
		return t
	}
	if home == "" {
		t.degrade("no home directory for the tree budget file")
		return t
	}
	dir := filepath.Join(home, ".avenor", "sockets")
	if err := safefile.PrivateDir(dir); err != nil {
		t.degrade(fmt.Sprintf("creating %s: %v", dir, err))
		return t
	}
	// A root killed before its close left its file: the next root removes
	// those of dead pids (ours only; a live root's file stays).
	safefile.RemoveStale(dir, treeBudgetPrefix)
	path := filepath.Join(dir, safefile.StaleName(treeBudgetPrefix, pid)+NewRunID()[:8]+".tree-budget")
	data, _ := json.Marshal(budgetFile{Version: 1, RootID: runID, RootPID: pid, Capacity: capacity, Reservations: []reservation{}})
	if err := createBudgetFile(path, append(data, '\n')); err != nil {
		t.degrade(fmt.Sprintf("creating %s: %v", path, err))
		return t
	}
	t.path, t.root = path, true
	return t
}

// treeBudgetPrefix starts a budget file's name:
// tree-budget-<root pid>-<random>.tree-budget (docs/stable.md#limits).
const treeBudgetPrefix = "tree-budget-"

// createBudgetFile creates a new budget file, refusing anything already at
// path (safefile.Create: O_EXCL|O_NOFOLLOW).
func createBudgetFile(path string, data []byte) error {
	f, err := safefile.Create(path, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

func (t *TreeBudget) degrade(reason string) {
	t.mode, t.reason = BudgetDegraded, reason
}

// Path is the budget file to pass on as AVENOR_TREE_BUDGET; "" when degraded.
func (t *TreeBudget) Path() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mode != BudgetActive {
		return ""
	}
	return t.path
}

// Reserve takes one slot of the tree for runtimeID; a full tree is full's
// error. A file that stopped working degrades the
// budget and admits.
func (t *TreeBudget) Reserve(runtimeID string, full func(capacity, active int) error) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mode != BudgetActive {
		return nil
	}
	var refused error
	err := t.locked(func(f *budgetFile) (bool, error) {
		if len(f.Reservations) >= f.Capacity {
			refused = full(f.Capacity, len(f.Reservations))
			return false, nil
		}
		f.Reservations = append(f.Reservations, reservation{
			PID: t.pid, Start: t.start, Supervisor: t.self, RuntimeID: runtimeID, At: t.now().UnixMilli(),
		})
		return true, nil
	})
	if err != nil {
		t.degrade(fmt.Sprintf("tree budget file %s: %v", t.path, err))
		return nil
	}
	return refused
}

// Release gives runtimeID's slot back.
func (t *TreeBudget) Release(runtimeID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mode != BudgetActive {
		return
	}
	err := t.locked(func(f *budgetFile) (bool, error) {
		return t.drop(f, func(r reservation) bool { return r.RuntimeID == runtimeID }), nil
	})
	if err != nil {
		t.degrade(fmt.Sprintf("tree budget file %s: %v", t.path, err))
	}
}

// drop removes this supervisor's reservations that match.
func (t *TreeBudget) drop(f *budgetFile, match func(reservation) bool) bool {
	kept := f.Reservations[:0]
	changed := false
	for _, r := range f.Reservations {
		if r.PID == t.pid && r.Supervisor == t.self && match(r) {
			changed = true
			continue
		}
		kept = append(kept, r)
	}
	f.Reservations = kept
	return changed
}

// Info is tree_budget's answer; localActive stands in for the tree's count
// when degraded.
func (t *TreeBudget) Info(localActive, localCapacity int) map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mode == BudgetActive {
		active := 0
		err := t.locked(func(f *budgetFile) (bool, error) {
			active = len(f.Reservations)
			return false, nil
		})
		if err == nil {
			return map[string]any{"active": active, "capacity": t.capacity, "root_id": t.rootID, "mode": BudgetActive, "path": t.path}
		}
		t.degrade(fmt.Sprintf("tree budget file %s: %v", t.path, err))
	}
	return map[string]any{"active": localActive, "capacity": localCapacity, "root_id": t.rootID, "mode": BudgetDegraded, "reason": t.reason}
}

// Close ends this supervisor's part in the tree: the root removes the file,
// a nested supervisor drops whatever it still holds.
func (t *TreeBudget) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.path == "" {
		return
	}
	if t.root {
		_ = os.Remove(t.path)
		return
	}
	if t.mode == BudgetActive {
		_ = t.locked(func(f *budgetFile) (bool, error) {
			return t.drop(f, func(reservation) bool { return true }), nil
		})
	}
}

// locked runs fn on the file's content under an exclusive flock, after
// reaping the reservations of dead supervisors; the file is rewritten when
// fn (or the reaping) changed it.
func (t *TreeBudget) locked(fn func(*budgetFile) (bool, error)) error {
	f, err := os.OpenFile(t.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("locking: %w", err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	var bf budgetFile
	if err := json.Unmarshal(data, &bf); err != nil {
		return fmt.Errorf("not a tree budget file: %w", err)
	}
	if bf.Capacity <= 0 {
		return errors.New("not a tree budget file: no capacity")
	}
	changed := reapDead(&bf, plugins.ProcessAlive)
	c, err := fn(&bf)
	if err != nil {
		return err
	}
	if !changed && !c {
		return nil
	}
	if bf.Reservations == nil {
		bf.Reservations = []reservation{}
	}
	out, err := json.Marshal(bf)
	if err != nil {
		return err
	}
	// Rewritten in place: the lock is on this inode.
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(append(out, '\n'), 0); err != nil {
		return err
	}
	return nil
}

// reapDead drops reservations whose supervisor is gone, as alive tells.
// Every executing runtime holds a reservation but the tree has only a few
// supervisors, so each supervisor is checked once per call: checking every
// reservation made each spawn and release cost one kill(0) and one /proc
// read per runtime running, quadratic in the runtimes (at 200 runtimes,
// ~11 % of the supervisor's CPU, most of it these /proc reads).
func reapDead(f *budgetFile, alive func(pid int, start uint64) bool) bool {
	type process struct {
		pid   int
		start uint64
	}
	known := map[process]bool{}
	kept := f.Reservations[:0]
	for _, r := range f.Reservations {
		p := process{r.PID, r.Start}
		ok, seen := known[p]
		if !seen {
			ok = alive(r.PID, r.Start)
			known[p] = ok
		}
		if ok {
			kept = append(kept, r)
		}
	}
	changed := len(kept) != len(f.Reservations)
	f.Reservations = kept
	return changed
}

// Degraded says why the budget is degraded (only the local limit applies),
// or ok false while the tree's file is in use.
func (t *TreeBudget) Degraded() (reason string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reason, t.mode == BudgetDegraded
}
