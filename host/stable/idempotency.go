package stable

import (
	"context"
	"sync"
	"time"
)

// Bounds of the idempotency store (contract §5.6).
const (
	IdempotencyTTL      = 24 * time.Hour
	IdempotencyCapacity = 1024
)

// idemStore remembers spawn results by idempotency key: the same key with
// the same params hash gets the stored result for IdempotencyTTL. A spawn in
// flight holds its key; a second spawn with the key waits for it.
type idemStore struct {
	ttl      time.Duration
	capacity int
	now      func() time.Time

	mu sync.Mutex
	m  map[string]*idemEntry
}

type idemEntry struct {
	hash   string
	at     time.Time
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
			if len(s.m) >= s.capacity {
				s.mu.Unlock()
				return nil, nil, ErrIdempotencyFull
			}
			e = &idemEntry{hash: hash, at: s.now(), done: make(chan struct{})}
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
		e.result, e.at = res, s.now()
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
