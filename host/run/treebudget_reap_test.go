package run

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestReapDeadChecksEachSupervisorOnce: reaping keeps the reservations of
// living supervisors, drops those of dead ones (a recycled pid, told by its
// start time, is dead), and asks about each supervisor process once, not
// once per reservation.
func TestReapDeadChecksEachSupervisorOnce(t *testing.T) {
	res := func(pid int, start uint64, id string) reservation {
		return reservation{PID: pid, Start: start, Supervisor: "s", RuntimeID: id}
	}
	for _, tc := range []struct {
		name        string
		in          []reservation
		alive       map[[2]uint64]bool // {pid, start} → alive
		wantKept    []string
		wantChanged bool
		wantChecks  int
	}{
		{name: "empty", wantChecks: 0},
		{
			name:       "one living supervisor with many runtimes",
			in:         []reservation{res(10, 5, "rt_1"), res(10, 5, "rt_2"), res(10, 5, "rt_3"), res(10, 5, "rt_4")},
			alive:      map[[2]uint64]bool{{10, 5}: true},
			wantKept:   []string{"rt_1", "rt_2", "rt_3", "rt_4"},
			wantChecks: 1,
		},
		{
			name: "a dead supervisor's reservations go, in order",
			in: []reservation{res(10, 5, "rt_1"), res(11, 7, "rt_2"), res(10, 5, "rt_3"), res(11, 7, "rt_4"),
				res(12, 9, "rt_5")},
			alive:       map[[2]uint64]bool{{10, 5}: true, {12, 9}: true},
			wantKept:    []string{"rt_1", "rt_3", "rt_5"},
			wantChanged: true,
			wantChecks:  3,
		},
		{
			name:        "a recycled pid is another process",
			in:          []reservation{res(10, 5, "rt_1"), res(10, 6, "rt_2"), res(10, 6, "rt_3")},
			alive:       map[[2]uint64]bool{{10, 6}: true},
			wantKept:    []string{"rt_2", "rt_3"},
			wantChanged: true,
			wantChecks:  2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := 0
			alive := func(pid int, start uint64) bool {
				checks++
				return tc.alive[[2]uint64{uint64(pid), start}]
			}
			f := &budgetFile{Capacity: 64, Reservations: slices.Clone(tc.in)}
			changed := reapDead(f, alive)
			var kept []string
			for _, r := range f.Reservations {
				kept = append(kept, r.RuntimeID)
			}
			if !slices.Equal(kept, tc.wantKept) || changed != tc.wantChanged {
				t.Errorf("reapDead kept %v (changed %v), want %v (changed %v)", kept, changed, tc.wantKept, tc.wantChanged)
			}
			if checks != tc.wantChecks {
				t.Errorf("reapDead asked %d times whether a supervisor lives, want %d (once per supervisor process)", checks, tc.wantChecks)
			}
		})
	}
}

// BenchmarkTreeBudget200: 200 runtimes reserve their slot of the tree, then
// release it, as 200 runtimes spawned at once and ending do; one op is the
// whole 400 read-modify-writes of the budget file.
func BenchmarkTreeBudget200(b *testing.B) {
	const n = 200
	for i := 0; i < b.N; i++ {
		tb := OpenTreeBudget("", b.TempDir(), NewRunID(), n, time.Now)
		if tb.mode != BudgetActive {
			b.Fatalf("tree budget degraded: %s", tb.reason)
		}
		for k := 0; k < n; k++ {
			if err := tb.Reserve("rt_"+strconv.Itoa(k), func(c, a int) error { return fmt.Errorf("full at %d", c) }); err != nil {
				b.Fatal(err)
			}
		}
		for k := 0; k < n; k++ {
			tb.Release("rt_" + strconv.Itoa(k))
		}
		if info := tb.Info(0, n); info["active"] != 0 || tb.mode != BudgetActive {
			b.Fatalf("after releasing all: %v", info)
		}
		tb.Close()
	}
}
