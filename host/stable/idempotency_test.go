package stable

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

// TestIdempotencyStoreEvicts: a full store makes room for a new key by
// forgetting expired results first, then the oldest finished one; a key a
// spawn still holds is never forgotten, and only a store full of those
// refuses a new key.
func TestIdempotencyStoreEvicts(t *testing.T) {
	// step is one begin: the key, and how the store must answer.
	type step struct {
		key      string
		finish   bool // finish the spawn at once (else it stays in flight)
		advance  time.Duration
		want     string // "new", "stored" or "full"
		wantKeys []string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"below capacity keeps every key", []step{
			{key: "a", finish: true, want: "new", wantKeys: []string{"a"}},
			{key: "b", finish: true, want: "new", wantKeys: []string{"a", "b"}},
			{key: "a", want: "stored", wantKeys: []string{"a", "b"}},
		}},
		{"full: the oldest finished key goes", []step{
			{key: "a", finish: true, want: "new"},
			{key: "b", finish: true, advance: time.Second, want: "new"},
			{key: "c", finish: true, advance: time.Second, want: "new", wantKeys: []string{"a", "b", "c"}},
			{key: "d", finish: true, advance: time.Second, want: "new", wantKeys: []string{"b", "c", "d"}},
			{key: "a", finish: true, advance: time.Second, want: "new", wantKeys: []string{"c", "d", "a"}},
			{key: "d", want: "stored", wantKeys: []string{"c", "d", "a"}},
		}},
		{"expired keys all go, not only the oldest", []step{
			{key: "a", finish: true, want: "new"},
			{key: "b", finish: true, advance: time.Second, want: "new"},
			{key: "c", finish: true, advance: IdempotencyTTL - time.Second, want: "new", wantKeys: []string{"a", "b", "c"}},
			{key: "d", finish: true, advance: 2 * time.Second, want: "new", wantKeys: []string{"c", "d"}},
			{key: "a", finish: true, want: "new", wantKeys: []string{"c", "d", "a"}},
		}},
		{"full: a key in flight is never evicted", []step{
			{key: "a", want: "new"}, // stays in flight
			{key: "b", finish: true, advance: time.Second, want: "new"},
			{key: "c", finish: true, advance: time.Second, want: "new"},
			{key: "d", finish: true, advance: time.Second, want: "new", wantKeys: []string{"a", "c", "d"}},
		}},
		{"full of spawns in flight: refused", []step{
			{key: "a", want: "new"},
			{key: "b", want: "new"},
			{key: "c", want: "new"},
			{key: "d", want: "full", wantKeys: []string{"a", "b", "c"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_700_000_000, 0)
			s := newIdemStore(func() time.Time { return now })
			s.capacity = 3
			var inFlight []func(map[string]any)
			for i, st := range tc.steps {
				now = now.Add(st.advance)
				stored, finish, err := s.begin(context.Background(), st.key, "h")
				got := "new"
				switch {
				case errors.Is(err, ErrIdempotencyFull):
					got = "full"
				case err != nil:
					t.Fatalf("step %d (%s): %v", i, st.key, err)
				case stored != nil:
					got = "stored"
				}
				if got != st.want {
					t.Fatalf("step %d (%s): %s, want %s", i, st.key, got, st.want)
				}
				if finish != nil {
					if st.finish {
						finish(map[string]any{"runtime_id": st.key + strconv.Itoa(i)})
					} else {
						inFlight = append(inFlight, finish)
					}
				}
				if st.wantKeys != nil {
					s.mu.Lock()
					keys := len(s.m)
					missing := ""
					for _, k := range st.wantKeys {
						if s.m[k] == nil {
							missing = k
						}
					}
					s.mu.Unlock()
					if keys != len(st.wantKeys) || missing != "" {
						t.Fatalf("step %d (%s): store holds %d keys (missing %q), want %v", i, st.key, keys, missing, st.wantKeys)
					}
				}
			}
			for _, f := range inFlight {
				f(nil)
			}
		})
	}
}
