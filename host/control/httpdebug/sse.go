package httpdebug

import (
	"encoding/json"
	"net/http"

	"github.com/avenor-go/avenor/host/event"
)

// SSE framing of docs/control-protocol.md#http-debug: every event is `event: event`, its data the
// event's JSON exactly as the NDJSON line holds it (final_output bounded, as
// in every control view).
const (
	ssePrefix = "event: event\ndata: "
	sseSuffix = "\n\n"
)

// encodeSSE frames one event.
func encodeSSE(ev event.Event) ([]byte, error) {
	raw, err := json.Marshal(event.Truncate(ev, event.FinalOutputLimit))
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(ssePrefix)+len(raw)+len(sseSuffix))
	b = append(b, ssePrefix...)
	b = append(b, raw...)
	return append(b, sseSuffix...), nil
}

// events is GET /events: Server-Sent Events until the stream ends (the run
// ended and its last event was sent), the client goes, or the server
// closes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts, bad := subscribeOptions(q)
	if bad != "" {
		httpError(w, http.StatusBadRequest, bad)
		return
	}
	id := q.Get("runtime_id")
	var sub Subscription
	var err error
	if st := s.cfg.Stable; st != nil && id == "" {
		// docs/control-protocol.md#subscribe: runtime_id is required for replay and after_seq.
		if opts.Replay || opts.AfterSeq > 0 {
			httpError(w, http.StatusBadRequest, msgRuntimeIDRequired)
			return
		}
		sub, err = st.SubscribeAll()
	} else {
		t := s.target(w, id, false)
		if t == nil {
			return
		}
		sub, err = t.Subscribe(opts)
	}
	if err != nil {
		s.targetError(w, err)
		return
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		s.log.Warn("http debug event stream cannot flush", "error", err)
		return
	}
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			frame, err := encodeSSE(ev)
			if err != nil {
				s.log.Error("http debug event could not be encoded", "event", ev.Type(), "error", err)
				continue
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		}
	}
}
