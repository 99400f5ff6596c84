package ochttp

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// startEvents opens GET /event and keeps it open for the session's life,
// reconnecting with capped backoff. It returns once the first connection
// is up, so that no event of the first turn is missed.
func (s *session) startEvents(ctx context.Context) error {
	evCtx, cancel := context.WithCancel(context.Background())
	s.stopEvents = cancel
	s.eventsDone = make(chan struct{})
	connected := make(chan error, 1)
	go s.eventLoop(evCtx, connected)
	t := time.NewTimer(connectTimeout)
	defer t.Stop()
	select {
	case err := <-connected:
		if err == nil {
			return nil
		}
		s.closeEvents()
		return errorf("GET /event: %v", err)
	case <-t.C:
		s.closeEvents()
		return errorf("GET /event on %s did not answer within %s", s.c, connectTimeout)
	case <-ctx.Done():
		s.closeEvents()
		return errorf("GET /event: %v", ctx.Err())
	}
}

func (s *session) closeEvents() {
	if s.stopEvents != nil {
		s.stopEvents()
		<-s.eventsDone
	}
}

// eventLoop owns the SSE connection. After a drop it reconnects and tells
// the turn in flight to re-read the session's messages: OpenCode has no
// Last-Event-ID, so events between the drop and the reconnect are lost
// from the stream and only the history has them.
func (s *session) eventLoop(ctx context.Context, connected chan<- error) {
	defer close(s.eventsDone)
	first := true
	backoff := backoffMin
	for {
		resp, err := s.c.events(ctx)
		if err != nil {
			if first {
				connected <- err
				return
			}
			s.log.Debug("event stream reconnect failed", "error", err, "backoff", backoff)
		} else {
			if first {
				connected <- nil
				first = false
			} else {
				s.log.Debug("event stream reconnected")
				s.resynced()
			}
			start := time.Now()
			err = s.readEvents(ctx, resp.Body)
			resp.Body.Close()
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("event stream dropped", "error", err)
			if time.Since(start) > backoffMax {
				backoff = backoffMin
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, backoffMax)
	}
}

func (s *session) readEvents(ctx context.Context, body interface{ Read([]byte) (int, error) }) error {
	r := newSSEReader(body)
	for {
		data, err := r.Next()
		if err != nil {
			return err
		}
		var f frame
		if json.Unmarshal(data, &f) != nil || f.Type == "" {
			s.log.Debug("bad SSE frame", "data", firstLine(string(data)))
			continue
		}
		if !known(f.Type) {
			n := s.unknown.Add(1)
			s.log.Debug("unknown OpenCode event", "type", f.Type, "unknown_frames", n)
			continue
		}
		var p properties
		if len(f.Properties) > 0 && json.Unmarshal(f.Properties, &p) != nil {
			s.log.Debug("bad SSE properties", "type", f.Type)
			continue
		}
		if p.sessionOf() != s.id {
			continue
		}
		if err := s.deliver(ctx, event{typ: f.Type, p: &p}); err != nil {
			return err
		}
	}
}

func known(typ string) bool {
	if knownTypes[typ] {
		return true
	}
	for _, p := range knownPrefixes {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// event is a parsed SSE event of this session.
type event struct {
	typ    string
	p      *properties
	resync bool // not an event: the stream reconnected
}

// deliver hands an event to the turn in flight; between turns the
// session's events are dropped (the next turn starts from its own).
func (s *session) deliver(ctx context.Context, ev event) error {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	select {
	case t.events <- ev:
		return nil
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *session) resynced() {
	_ = s.deliver(context.Background(), event{resync: true})
}
