package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/client"
)

// routes is the board's HTTP surface (docs/board.md, plus /api/answer and
// /api/usage):
//
//	GET  /api/config    {mutations_allowed, auth_required, stall_after_ms} — no token needed
//	GET  /api/sockets   [{path, type, pid, status, runtimes}]
//	GET  /api/status    ?socket=[&runtime_id=]  the status snapshot or runtime entry
//	GET  /api/list      ?socket=  a stable supervisor's runtime entries
//	GET  /api/events    ?socket=[&runtime_id=][&token=]  SSE of the events
//	GET  /api/usage     [?socket=]  tokens and cost per runtime and in total
//	POST /api/cancel    {socket, runtime_id?}
//	POST /api/prompt    {socket, text, runtime_id?}
//	POST /api/answer    {socket, request_id, option_id, message?, runtime_id?}
//	POST /api/answer-question  {socket, request_id, answers, runtime_id?}
//	POST /api/set-budget  {socket, runtime_id, spend_tokens?, spend_usd?, spend_wall?, resume?}
//	GET  /board/        the page; / and /board redirect to it
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(path, method string, query bool, h func(http.ResponseWriter, *http.Request)) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method != method:
				w.Header().Set("Allow", method)
				writeError(w, http.StatusMethodNotAllowed, "method not allowed: "+path+" takes "+method)
			case !s.authorized(r, query):
				w.Header().Set("WWW-Authenticate", `Bearer realm="avenor board"`)
				writeError(w, http.StatusUnauthorized, "unauthorized: send the board's token (Authorization: Bearer <token>); it is in the URL avenor board printed")
			case method == http.MethodPost && !s.cfg.AllowMutations:
				writeError(w, http.StatusForbidden, "mutations are not allowed: start avenor board with --allow-mutations to cancel, prompt or answer")
			default:
				h(w, r)
			}
		})
	}
	mux.HandleFunc("/api/config", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writeError(w, http.StatusMethodNotAllowed, "method not allowed: /api/config takes GET")
			return
		}
		writeJSON(w, map[string]any{
			"mutations_allowed": s.cfg.AllowMutations,
			"auth_required":     s.token != "",
			"stall_after_ms":    s.cfg.StallAfter.Milliseconds(),
		})
	})
	api("/api/sockets", http.MethodGet, false, s.handleSockets)
	api("/api/status", http.MethodGet, false, s.handleStatus)
	api("/api/list", http.MethodGet, false, s.handleList)
	api("/api/events", http.MethodGet, true, s.handleEvents)
	api("/api/usage", http.MethodGet, false, s.handleUsage)
	api("/api/cancel", http.MethodPost, false, s.handleCancel)
	api("/api/prompt", http.MethodPost, false, s.handlePrompt)
	api("/api/answer", http.MethodPost, false, s.handleAnswer)
	api("/api/answer-question", http.MethodPost, false, s.handleAnswerQuestion)
	api("/api/set-budget", http.MethodPost, false, s.handleSetBudget)
	mux.Handle("/board/", http.StripPrefix("/board/", pageHandler()))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.URL.Path)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/board" {
			// The query (a ?token=) goes along to the page.
			target := "/board/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusFound)
			return
		}
		http.NotFound(w, r)
	})
	return s.guard(mux)
}

// guard refuses, before any route, a request whose Host is not this
// board's address (DNS rebinding) or that a page of another site sends.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case !s.bind.hostAllowed(r.Host):
			writeError(w, http.StatusForbidden, "forbidden: Host "+strconv.Quote(r.Host)+" is not this board's address; open the URL avenor board printed")
		case !s.bind.originAllowed(r.Header.Get("Origin"), r.Host):
			writeError(w, http.StatusForbidden, "forbidden: requests from another site ("+strconv.Quote(r.Header.Get("Origin"))+") are refused")
		case r.Header.Get("Sec-Fetch-Site") == "cross-site":
			writeError(w, http.StatusForbidden, "forbidden: cross-site requests are refused")
		default:
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Referrer-Policy", "no-referrer") // the page's URL holds the token
			next.ServeHTTP(w, r)
		}
	})
}

func (s *Server) handleSockets(w http.ResponseWriter, r *http.Request) {
	paths, left := s.sockets()
	if left > 0 {
		w.Header().Set("X-Avenor-Sockets-Left-Out", strconv.Itoa(left))
	}
	out := make([]SocketEntry, 0, len(paths))
	// Probed one by one: a stale socket fails at once (ECONNREFUSED), and
	// a hung one costs at most DialTimeout.
	for _, p := range paths {
		if e, ok := s.probe(r.Context(), p); ok {
			out = append(out, e)
		}
	}
	writeJSON(w, out)
}

// withSocket runs call on the connection of the request's socket and
// writes its answer (or its error, as an HTTP status).
func (s *Server) withSocket(w http.ResponseWriter, r *http.Request, socket string, call func(context.Context, *client.Client) (any, error)) {
	path, err := s.checkSocket(socket)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	c, release, err := s.conn(r.Context(), path)
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("cannot reach %s: %v", path, err))
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), DialTimeout)
	defer cancel()
	res, err := call(ctx, c)
	if err != nil {
		code, msg := rpcStatus(err)
		writeError(w, code, msg)
		return
	}
	writeJSON(w, res)
}

// rpcStatus maps a control error to the HTTP status and text the page
// shows.
func rpcStatus(err error) (int, string) {
	var re *client.RPCError
	if !errors.As(err, &re) {
		return http.StatusBadGateway, "control socket: " + err.Error()
	}
	switch re.Code {
	case client.CodeInvalidParams:
		return http.StatusBadRequest, re.Error()
	case client.CodeMethodNotFound:
		return http.StatusNotFound, re.Error()
	case client.CodeNoPendingPermission:
		return http.StatusConflict, "no pending permission request (it was answered or the turn ended): " + re.Error()
	case client.CodePermissionDenied:
		return http.StatusConflict, "another control client owns this runtime and only it may cancel, prompt or answer until it disconnects: " + re.Error()
	}
	return http.StatusConflict, re.Error()
}

func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.withSocket(w, r, q.Get("socket"), func(ctx context.Context, c *client.Client) (any, error) {
		if id := q.Get("runtime_id"); id != "" {
			rt, err := c.Runtime(ctx, id)
			return rt.Raw, err
		}
		st, err := c.Status(ctx)
		return st.Raw, err
	})
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	s.withSocket(w, r, r.URL.Query().Get("socket"), func(ctx context.Context, c *client.Client) (any, error) {
		list, err := c.List(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(list))
		for i, rt := range list {
			out[i] = rt.Raw
		}
		return out, nil
	})
}

// mutation is the body of the POST routes.
type mutation struct {
	Socket    string `json:"socket"`
	RuntimeID string `json:"runtime_id"`
	Text      string `json:"text"`
	// Interrupt (prompt): cancel the turn in flight and continue with
	// Text, keeping the queue; default false queues Text after it.
	Interrupt bool   `json:"interrupt"`
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Message   string `json:"message"`
	// Answers (answer-question): one answer per prompt of the question.
	Answers [][]string `json:"answers"`
}

// readMutation decodes a POST body; false when it wrote the error.
func readMutation(w http.ResponseWriter, r *http.Request, need ...string) (mutation, bool) {
	var m mutation
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		writeError(w, http.StatusBadRequest, "invalid json body: "+err.Error())
		return m, false
	}
	var missing []string
	for _, f := range need {
		if (f == "text" && m.Text == "") || (f == "request_id" && m.RequestID == "") || (f == "option_id" && m.OptionID == "") || (f == "answers" && m.Answers == nil) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		writeError(w, http.StatusBadRequest, "missing "+strings.Join(missing, ", ")+" in the body")
		return m, false
	}
	return m, true
}

func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	m, ok := readMutation(w, r)
	if !ok {
		return
	}
	s.withSocket(w, r, m.Socket, func(ctx context.Context, c *client.Client) (any, error) {
		return okResult, c.Cancel(ctx, m.RuntimeID)
	})
}

func (s *Server) handlePrompt(w http.ResponseWriter, r *http.Request) {
	m, ok := readMutation(w, r, "text")
	if !ok {
		return
	}
	s.withSocket(w, r, m.Socket, func(ctx context.Context, c *client.Client) (any, error) {
		if m.Interrupt {
			return okResult, c.InterruptAndPrompt(ctx, m.Text, true, m.RuntimeID)
		}
		return okResult, c.Prompt(ctx, m.Text, m.RuntimeID)
	})
}

// AnswerSource is the source hint of the board's permission answers: the
// runtime's permission.response says source "board".
const AnswerSource = "board"

func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	m, ok := readMutation(w, r, "request_id", "option_id")
	if !ok {
		return
	}
	s.withSocket(w, r, m.Socket, func(ctx context.Context, c *client.Client) (any, error) {
		return okResult, c.AnswerPermissionAs(ctx, AnswerSource, m.RequestID, m.OptionID, m.Message, m.RuntimeID)
	})
}

// handleAnswerQuestion relays an answer to the runtime's question; its
// question.response says source "board".
func (s *Server) handleAnswerQuestion(w http.ResponseWriter, r *http.Request) {
	m, ok := readMutation(w, r, "request_id", "answers")
	if !ok {
		return
	}
	s.withSocket(w, r, m.Socket, func(ctx context.Context, c *client.Client) (any, error) {
		return okResult, c.AnswerQuestion(ctx, AnswerSource, m.RequestID, m.Answers, m.RuntimeID)
	})
}

var okResult = map[string]bool{"ok": true}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
