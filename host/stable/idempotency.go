package stable

import (
	"context"
	"sync"
	"time"
)

// Bounds of the idempotency store (docs/control-protocol.md#spawn).
const (
	// IdempotencyTTL is how long a spawn's result answers its key.
	IdempotencyTTL = 24 * time.Hour
	// IdempotencyCapacity bounds the keys remembered at once; a new key
	// beyond it evicts the oldest finished one.
	IdempotencyCapacity = 1024
)

// idemStore remembers spawn results by idempotency key: the same key with
// the same params hash gets the stored result for IdempotencyTTL. A spawn in
// flight holds its key; a second spawn with the key waits for it.
//
// The store is bounded by forgetting, not by refusing: a new key that finds
// it full evicts the oldest finished result (expired ones went first), so
// that a long-lived supervisor keeps taking new keys. Refusing instead left
// every new key refused for a whole TTL once 1024 had been seen. Only when
// every key belongs to a spawn still in flight is a new key refused
// (ErrIdempotencyFull): those cannot be forgotten without letting a retry
// spawn twice.
type idemStore struct {
	ttl      time.Duration
	capacity int
	now      func() time.Time

	mu   sync.Mutex
	m    map[string]*idemEntry
	tick uint64 // orders entries stamped within one clock reading
}

type idemEntry struct {
	hash   string
	at     time.Time
	order  uint64        // tie-break of at: the later stamped, the larger
	done   chan struct{} // closed when the spawn holding the key ends
	result map[string]any
}

func newIdemStore(now func() time.Time) *idemStore {
	return &idemStore{ttl: IdempotencyTTL, capacity: IdempotencyCapacity, now: now, m: map[string]*idemEntry{}}
}

// begin looks key up. A stored result for the same hash is returned (with a
// nil finish). Otherwise the caller holds the key and must call finish with
// its result, or with nil when the spawn failed (the key is then free).
func (s *idemStore) begin(ctx context.Context, key, hash string) (stored map[string]any, finish func(map[string]any), err error) {
	for {
		s.mu.Lock()
		s.purgeLocked()
		e := s.m[key]
		if e == nil {
			if len(s.m) >= s.capacity && !s.evictOldestLocked() {
				s.mu.Unlock()
				return nil, nil, ErrIdempotencyFull
			}
			s.tick++
			e = &idemEntry{hash: hash, at: s.now(), order: s.tick, done: make(chan struct{})}
			s.m[key] = e
			s.mu.Unlock()
			return nil, func(res map[string]any) { s.finish(key, e, res) }, nil
		}
		if e.hash != hash {
			s.mu.Unlock()
			return nil, nil, ErrIdempotencyMismatch
		}
		select {
		case <-e.done:
			res := e.result
			s.mu.Unlock()
			return res, nil, nil
		default:
		}
		s.mu.Unlock()
		select { // the first spawn with this key is still running
		case <-e.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (s *idemStore) finish(key string, e *idemEntry, res map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if res == nil {
		if s.m[key] == e {
			delete(s.m, key)
		}
	} else {
		s.tick++
		e.result, e.at, e.order = res, s.now(), s.tick
	}
	close(e.done)
}

// purgeLocked forgets results older than the TTL.
func (s *idemStore) purgeLocked() {
	cut := s.now().Add(-s.ttl)
	for k, e := range s.m {
		select {
		case <-e.done:
			if e.at.Before(cut) {
				delete(s.m, k)
			}
		default:
		}
	}
}

// evictOldestLocked forgets the finished result stored longest ago; false
// when every key belongs to a spawn in flight.
func (s *idemStore) evictOldestLocked() bool {
	var oldest string
	var at time.Time
	var order uint64
	found := false
	for k, e := range s.m {
		select {
		case <-e.done:
		default:
			continue // a spawn holds it
		}
		// Oldest first; within one clock reading (a coarse clock, a test's
		// fixed one) the one stamped first, not whichever the map yields.
		if !found || e.at.Before(at) || (e.at.Equal(at) && e.order < order) {
			oldest, at, order, found = k, e.at, e.order, true
		}
	}
	if found {
		delete(s.m, oldest)
	}
	return found
}
