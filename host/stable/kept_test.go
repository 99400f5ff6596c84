package stable

import (
	"slices"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestKeepEvictsCrossProcessFirst: parked runtimes keep at most
// MaxKeptPlugins plugins, in_process ones included; past it the
// longest-parked cross_process runtime's plugin goes first, an in_process
// one (whose session dies with it) only when no other is left.
func TestKeepEvictsCrossProcessFirst(t *testing.T) {
	const in, cross = sdk.ResumeInProcess, sdk.ResumeCrossProcess
	for _, tc := range []struct {
		name   string
		scopes []string // kept in this order
		want   []int    // evicted, by index, in order
		left   []int
	}{
		{"within the bound", []string{in, cross}, nil, []int{0, 1}},
		{"oldest cross_process goes", []string{in, cross, cross, in}, []int{1}, []int{0, 2, 3}},
		{"the new one itself when it is the only cross_process", []string{in, in, in, cross}, []int{3}, []int{0, 1, 2}},
		{"oldest in_process when none other is left", []string{in, in, in, in, in}, []int{0, 1}, []int{2, 3, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Supervisor{cfg: Config{MaxKeptPlugins: 3}}
			rts := make([]*runtime, len(tc.scopes))
			index := map[*runtime]int{}
			var evicted []int
			for i, scope := range tc.scopes {
				rts[i] = &runtime{n: i}
				index[rts[i]] = i
				for _, v := range s.boundKeptLocked(keptRuntime{rt: rts[i], inProcess: scope == in}) {
					evicted = append(evicted, index[v])
				}
			}
			var left []int
			for _, k := range s.kept {
				left = append(left, index[k.rt])
			}
			if !slices.Equal(evicted, tc.want) || !slices.Equal(left, tc.left) {
				t.Fatalf("evicted %v, kept %v; want evicted %v, kept %v", evicted, left, tc.want, tc.left)
			}
		})
	}
}
