package httpdebug

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/permission"
)

// Response texts of docs/control-protocol.md#http-debug. Harnesses may match them: they must not
// change.
const (
	msgForbidden           = "forbidden"
	msgUnauthorized        = "unauthorized"
	msgNotFound            = "not found"
	msgMethodNotAllowed    = "method not allowed"
	msgRuntimeNotFound     = "runtime not found"
	msgRuntimeIDRequired   = "runtime_id required"
	msgCancelNeedsRuntime  = "runtime_id required in stable mode; use POST /cancel/<runtime_id>"
	msgNoPendingPermission = "no pending permission"
	msgInvalidJSON         = "invalid json"
	msgInvalidPermission   = "invalid permission message"
)

// maxAnswerBody bounds POST /answer-permission's body; a permission message
// is at most permission.MaxMessageBytes.
const maxAnswerBody = 1 << 20

// httpError answers code with msg as plain text, as http.Error does.
func httpError(w http.ResponseWriter, code int, msg string) {
	http.Error(w, msg, code)
}

// writeJSON answers 200 with v as JSON (the NDJSON log's encoding: sorted
// keys, HTML-escaped).
func (s *Server) writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("http debug response could not be encoded", "error", err)
		httpError(w, http.StatusInternalServerError, "response could not be encoded: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// allow answers 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	httpError(w, http.StatusMethodNotAllowed, msgMethodNotAllowed)
	return false
}

// route dispatches the routes of docs/control-protocol.md#http-debug (and GET /runtimes,
// docs/control-protocol.md#http-debug). The stable routes answer 404 "not found" for a one-shot
// run.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	stable := s.cfg.Stable != nil
	switch {
	case p == "/status":
		if allow(w, r, http.MethodGet) {
			s.status(w)
		}
	case strings.HasPrefix(p, "/status/") && stable:
		if allow(w, r, http.MethodGet) {
			s.runtimeStatus(w, strings.TrimPrefix(p, "/status/"))
		}
	case p == "/events":
		if allow(w, r, http.MethodGet) {
			s.events(w, r)
		}
	case p == "/cancel":
		if allow(w, r, http.MethodPost) {
			s.cancel(w, "", false)
		}
	case strings.HasPrefix(p, "/cancel/") && stable:
		if allow(w, r, http.MethodPost) {
			s.cancel(w, strings.TrimPrefix(p, "/cancel/"), true)
		}
	case p == "/answer-permission":
		if allow(w, r, http.MethodPost) {
			s.answerPermission(w, r)
		}
	case p == "/runtimes" && stable:
		if allow(w, r, http.MethodGet) {
			s.writeJSON(w, s.cfg.Stable.List())
		}
	default:
		httpError(w, http.StatusNotFound, msgNotFound)
	}
}

// target finds the runtime a request names. A one-shot run accepts its own
// id or none; stable needs one when required is set. It answers the error
// itself and returns nil then.
func (s *Server) target(w http.ResponseWriter, id string, required bool) Target {
	if st := s.cfg.Stable; st != nil {
		if id == "" {
			if required {
				httpError(w, http.StatusBadRequest, msgRuntimeIDRequired)
			}
			return nil
		}
		t, ok := st.Runtime(id)
		if !ok {
			httpError(w, http.StatusNotFound, msgRuntimeNotFound)
			return nil
		}
		return t
	}
	if id != "" && id != s.cfg.RunID {
		httpError(w, http.StatusNotFound, msgRuntimeNotFound)
		return nil
	}
	return s.cfg.Run
}

// status is GET /status: the one-shot snapshot, or stable's runtime list.
func (s *Server) status(w http.ResponseWriter) {
	if st := s.cfg.Stable; st != nil {
		s.writeJSON(w, st.List())
		return
	}
	s.writeJSON(w, s.cfg.Run.Status())
}

// runtimeStatus is GET /status/<runtime_id> (stable).
func (s *Server) runtimeStatus(w http.ResponseWriter, id string) {
	if t := s.target(w, id, true); t != nil {
		s.writeJSON(w, t.Status())
	}
}

// cancel is POST /cancel (one-shot: the run; stable: refused) and POST
// /cancel/<runtime_id> (stable).
func (s *Server) cancel(w http.ResponseWriter, id string, byID bool) {
	if s.cfg.Stable != nil && !byID {
		httpError(w, http.StatusBadRequest, msgCancelNeedsRuntime)
		return
	}
	t := s.target(w, id, true)
	if t == nil {
		return
	}
	if err := t.Cancel(); err != nil {
		s.targetError(w, err)
		return
	}
	s.writeJSON(w, map[string]any{"ok": true})
}

// answerBody is POST /answer-permission's body; runtime_id is stable's.
type answerBody struct {
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Message   string `json:"message"`
	RuntimeID string `json:"runtime_id"`
}

// answerPermission is POST /answer-permission.
func (s *Server) answerPermission(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAnswerBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, "request body over "+strconv.Itoa(maxAnswerBody)+" bytes")
			return
		}
		httpError(w, http.StatusBadRequest, msgInvalidJSON)
		return
	}
	var b answerBody
	if err := json.Unmarshal(data, &b); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			httpError(w, http.StatusBadRequest, msgInvalidPermission)
			return
		}
		httpError(w, http.StatusBadRequest, msgInvalidJSON)
		return
	}
	if b.RequestID == "" || b.OptionID == "" {
		httpError(w, http.StatusBadRequest, msgInvalidPermission)
		return
	}
	t := s.target(w, b.RuntimeID, true)
	if t == nil {
		return
	}
	if err := t.AnswerPermission(b.RequestID, b.OptionID, b.Message); err != nil {
		s.targetError(w, err)
		return
	}
	s.writeJSON(w, map[string]any{"accepted": true})
}

// targetError answers a target's error.
func (s *Server) targetError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrRuntimeNotFound):
		httpError(w, http.StatusNotFound, msgRuntimeNotFound)
	case errors.Is(err, ErrNoPendingPermission), errors.Is(err, permission.ErrNotPending),
		errors.Is(err, permission.ErrAlreadyAnswered):
		httpError(w, http.StatusConflict, msgNoPendingPermission)
	case errors.Is(err, permission.ErrInvalid):
		s.log.Debug("http debug permission answer refused", "error", err)
		httpError(w, http.StatusBadRequest, msgInvalidPermission)
	default:
		s.log.Warn("http debug request failed", "error", err)
		httpError(w, http.StatusInternalServerError, err.Error())
	}
}

// subscribeOptions reads /events' query: replay, limit and after_seq as
// the control socket's subscribe takes them (docs/control-protocol.md#subscribe).
func subscribeOptions(q map[string][]string) (SubscribeOptions, string) {
	var o SubscribeOptions
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if v := get("replay"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, "replay must be true or false"
		}
		o.Replay = b
	}
	if v := get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, "limit must be a non-negative integer"
		}
		o.Limit = n
	}
	switch {
	case o.Limit == 0:
		o.Limit = control.DefaultHistoryLimit
	case o.Limit > control.MaxHistoryLimit:
		o.Limit = control.MaxHistoryLimit
	}
	if v := get("after_seq"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return o, "after_seq must be a non-negative integer"
		}
		o.AfterSeq = n
	}
	return o, ""
}
