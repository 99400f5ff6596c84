package board

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/avenor-go/avenor/client"
)

// handleEvents streams a socket's events as SSE, one `event: event` with
// the event's JSON per control notification (docs/control-protocol.md#subscribe's order,
// subscriber.lagged included). With runtime_id only that runtime's events
// come; with replay=1 the buffered history (up to 256 events) comes first,
// after the last seq the browser saw (Last-Event-ID or after_seq), so an
// EventSource that reconnects neither loses nor repeats what the server
// still holds. When the socket goes away the stream sends `event: end`
// and closes.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	path, err := s.checkSocket(q.Get("socket"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	opts := client.SubscribeOptions{RuntimeID: q.Get("runtime_id"), Replay: q.Get("replay") == "1", Limit: 256}
	for _, v := range []string{r.Header.Get("Last-Event-ID"), q.Get("after_seq")} {
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("after_seq %q is not a non-negative integer", v))
			return
		}
		opts.AfterSeq = max(opts.AfterSeq, n)
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		writeError(w, http.StatusServiceUnavailable, fmt.Sprintf("too many event streams: %d are open (board.MaxStreams); close a tab and retry", MaxStreams))
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming is not supported by this connection")
		return
	}
	// A connection of its own: a client carries one subscription.
	c, err := s.dialStream(r, path)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("cannot reach %s: %v", path, err))
		return
	}
	defer c.Close()
	if !s.cfg.AllowMutations {
		// A viewer that cannot answer never keeps a run's permission
		// requests from its file handler.
		if err := observe(r.Context(), c); err != nil {
			code, msg := rpcStatus(err)
			writeError(w, code, msg)
			return
		}
	}
	sub, err := c.Subscribe(r.Context(), opts)
	if err != nil {
		code, msg := rpcStatus(err)
		writeError(w, code, msg)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	keep := time.NewTicker(StreamKeepAlive)
	defer keep.Stop()
	var buf bytes.Buffer
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				fmt.Fprint(w, "event: end\ndata: {}\n\n")
				flusher.Flush()
				return
			}
			buf.Reset()
			// One line, whatever the server sent: SSE ends data at a newline.
			if json.Compact(&buf, ev.Raw) != nil {
				continue
			}
			if opts.RuntimeID != "" && ev.Seq > 0 {
				// Per-runtime seqs only: a stream of many runtimes has no
				// single order to resume from.
				fmt.Fprintf(w, "id: %d\n", ev.Seq)
			}
			fmt.Fprintf(w, "event: event\ndata: %s\n\n", buf.Bytes())
			flusher.Flush()
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Server) dialStream(r *http.Request, path string) (*client.Client, error) {
	ctx, cancel := contextWithTimeout(r, DialTimeout)
	defer cancel()
	return client.Dial(ctx, path)
}
