package client

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Event is one event notification: the event's JSON exactly as the server
// sent it (the same bytes as its --on-event NDJSON line, with final_output
// bounded to 4096 runes) and the envelope fields most consumers need.
type Event struct {
	// Name is the "event" field, e.g. "session.end" (sdk.EventSessionEnd).
	Name sdk.EventType
	// Seq is the per-runtime sequence number; 0 for subscriber.lagged,
	// which carries none.
	Seq int64
	// RuntimeID is set by stable supervisors.
	RuntimeID string
	// Raw is the event object as sent.
	Raw json.RawMessage
}

func newEvent(raw json.RawMessage) Event {
	ev, _ := parseEvent(raw)
	return ev
}

// parseEvent is newEvent that also says whether raw was a JSON object with
// well-typed envelope fields.
func parseEvent(raw json.RawMessage) (Event, error) {
	var h struct {
		Name      sdk.EventType `json:"event"`
		Seq       int64         `json:"seq"`
		RuntimeID string        `json:"runtime_id"`
	}
	err := json.Unmarshal(raw, &h)
	return Event{Name: h.Name, Seq: h.Seq, RuntimeID: h.RuntimeID, Raw: raw}, err
}

// Fields decodes the whole event (numbers as json.Number).
func (e Event) Fields() (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(e.Raw))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

// Decode unmarshals the event into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// SubscribeOptions are the subscribe params (docs/control-protocol.md#subscribe); the zero value
// subscribes to live events from the next one on.
type SubscribeOptions struct {
	// RuntimeID filters a stable supervisor's events to one runtime; stable
	// requires it with Replay or AfterSeq. A one-shot run needs none.
	RuntimeID string
	// Replay sends the buffered history (up to Limit) before live events.
	Replay bool
	// Limit bounds the replay: 0 means 64, the server caps it at 256.
	Limit int
	// AfterSeq skips events with seq <= AfterSeq: the last seq already seen.
	AfterSeq int64
}

// clientQueue bounds the events waiting for the consumer.
const clientQueue = 4096

// Subscription delivers a Client's events in order.
type Subscription struct {
	out  chan Event
	wake chan struct{}
	done chan struct{}
	once sync.Once

	mu       sync.Mutex
	queue    []Event
	dropped  int64
	finished bool
}

func newSubscription() *Subscription {
	s := &Subscription{out: make(chan Event), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.pump()
	return s
}

// C returns the events; it is closed when the connection ends.
func (s *Subscription) C() <-chan Event { return s.out }

// push queues ev; a full queue drops its oldest event. It never blocks the
// connection's reader, so calls keep working while events wait.
func (s *Subscription) push(ev Event) {
	s.mu.Lock()
	if len(s.queue) == clientQueue {
		s.queue = s.queue[1:]
		s.dropped++
	}
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) next() (Event, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped > 0 {
		n := s.dropped
		s.dropped = 0
		raw, _ := json.Marshal(map[string]any{"event": string(sdk.EventSubscriberLagged), "dropped_count": n, "source": "client"})
		return newEvent(raw), true, false
	}
	if len(s.queue) > 0 {
		ev := s.queue[0]
		s.queue[0] = Event{}
		s.queue = s.queue[1:]
		return ev, true, false
	}
	return Event{}, false, s.finished
}

func (s *Subscription) pump() {
	defer close(s.out)
	for {
		ev, ok, finished := s.next()
		if finished {
			return
		}
		if !ok {
			select {
			case <-s.wake:
			case <-s.done:
				return
			}
			continue
		}
		select {
		case s.out <- ev:
		case <-s.done:
			return
		}
	}
}

// stop ends delivery at once (the Client was closed).
func (s *Subscription) stop() { s.once.Do(func() { close(s.done) }) }

// Subscribe sends subscribe and returns the subscription its events arrive
// on. A Client holds one subscription.
func (c *Client) Subscribe(ctx context.Context, opts SubscribeOptions) (*Subscription, error) {
	c.mu.Lock()
	if c.sub != nil {
		c.mu.Unlock()
		return nil, ErrSubscribed
	}
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	// Registered before the call: events may follow the result at once.
	sub := newSubscription()
	c.sub = sub
	c.mu.Unlock()
	params := map[string]any{}
	if opts.RuntimeID != "" {
		params["runtime_id"] = opts.RuntimeID
	}
	if opts.Replay {
		params["replay"] = true
	}
	if opts.Limit > 0 {
		params["limit"] = opts.Limit
	}
	if opts.AfterSeq > 0 {
		params["after_seq"] = opts.AfterSeq
	}
	var res struct {
		Subscribed bool `json:"subscribed"`
	}
	var p any
	if len(params) > 0 { // the zero options send no params, as the original's tail did
		p = params
	}
	if err := c.Call(ctx, "subscribe", p, &res); err != nil {
		c.mu.Lock()
		c.sub = nil
		c.mu.Unlock()
		sub.finish()
		return nil, err
	}
	return sub, nil
}
