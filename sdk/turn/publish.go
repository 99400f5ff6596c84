package turn

import "sync"

// Publish makes v, a backend's state of the turn it runs, what *slot holds
// (under mu, the lock the backend's reader takes to look at *slot) and
// returns the func that clears *slot again, unless another turn's state has
// taken its place by then. A backend's Prompt defers it:
//
//	defer turn.Publish(&s.mu, &s.turn, t)()
//
// so the frames its reader maps find the turn in flight while Prompt runs,
// and no turn once it has returned.
func Publish[T any](mu sync.Locker, slot **T, v *T) (clear func()) {
	mu.Lock()
	*slot = v
	mu.Unlock()
	return func() {
		mu.Lock()
		if *slot == v {
			*slot = nil
		}
		mu.Unlock()
	}
}
