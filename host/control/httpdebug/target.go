package httpdebug

import "github.com/avenor-go/avenor/host/event"

// Target is one runtime as the adapter shows and controls it: the run of
// `avenor run` or one runtime of `avenor stable`.
type Target interface {
	// Status is the runtime's status, sent as JSON: the one-shot snapshot
	// of docs/control-protocol.md#status (GET /status) or a stable runtime entry of docs/control-protocol.md#list
	// (GET /status/<runtime_id>).
	Status() any
	// Subscribe streams the runtime's events as the control socket's
	// subscribe does (docs/control-protocol.md#subscribe), opts already validated and limited. C closes
	// when the stream ends: once the runtime has ended and every event up
	// to its last was delivered. An error wrapping ErrRuntimeNotFound
	// answers 404.
	Subscribe(opts SubscribeOptions) (Subscription, error)
	// Cancel ends the runtime; for a one-shot run it is SIGINT (stop reason
	// cancelled, exit 130). An error wrapping ErrRuntimeNotFound answers
	// 404, any other 500.
	Cancel() error
	// AnswerPermission answers the runtime's pending permission request.
	// It returns an error wrapping ErrNoPendingPermission when nothing is
	// pending or requestID is not the pending request's (409), one matching
	// permission.ErrInvalid when the answer does not fit the request (400),
	// and ErrRuntimeNotFound when the runtime is gone (404).
	AnswerPermission(requestID, optionID, message string) error
}

// Supervisor is what `avenor stable` serves: runtimes by id. Serving one
// (Config.Stable) turns on the stable routes of docs/control-protocol.md#http-debug and decision
// 6: GET /status/<id>, POST /cancel/<id>, GET /events?runtime_id=,
// GET /runtimes; POST /cancel and POST /answer-permission then need a
// runtime id.
type Supervisor interface {
	// Runtime returns the runtime with this id, false when there is none.
	Runtime(id string) (Target, bool)
	// List is the runtime entries as the control socket's list method
	// answers them (docs/control-protocol.md#spawn); sent as JSON by GET /runtimes and GET /status.
	List() any
	// SubscribeAll streams the live events of every runtime, present and
	// future, from now on, each carrying its runtime_id: GET /events
	// without runtime_id. Its C closes when the supervisor stops.
	SubscribeAll() (Subscription, error)
}

// SubscribeOptions are the query of GET /events, with the meaning of the
// control socket's subscribe params (docs/control-protocol.md#subscribe).
type SubscribeOptions struct {
	// Replay sends up to Limit buffered events first, then live ones;
	// replay and live are de-duplicated by seq.
	Replay bool
	// Limit bounds the replay: 1..MaxReplay (the adapter applies the
	// default 64 and the cap 256).
	Limit int
	// AfterSeq skips events whose seq is not above it.
	AfterSeq int64
}

// Subscription is a stream of events; *event.Subscription implements it.
type Subscription interface {
	// C delivers the events; it is closed when the stream ends or after
	// Close.
	C() <-chan event.Event
	// Close ends the subscription and waits for its goroutine; it is
	// idempotent.
	Close()
}
