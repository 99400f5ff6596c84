package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Config configures a Server. The zero value is usable.
type Config struct {
	// Script decides the reply to every request that offers tools.
	// Default: ShellThenText("echo hello > out.txt", "DONE").
	Script Script
	// Side decides the reply to requests that offer no tools (titles,
	// summaries, structured side calls). Default: DefaultSide.
	Side Script
	// Models are listed by GET .../models. Default: fake-model.
	Models []string
	// Now stamps the `created` fields. Default: time.Now.
	Now func() time.Time
	// Logf, when set, gets one line per request.
	Logf func(format string, args ...any)
}

// DefaultCommand is the command the default script runs through the shell tool.
const DefaultCommand = "echo hello > out.txt"

// Server is a running fake LLM.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port>, without a path.
	URL string

	cfg  Config
	http *http.Server
	ln   net.Listener
	done chan struct{}

	mu     sync.Mutex
	script Script
	reqs   []*Request
	ids    int
	closed bool
}

// dialects are the wire formats served, tried in order.
var dialects = []dialect{openAIChat{}, gemini{}, anthropic{}, openAIResponses{}}

// New starts a server on 127.0.0.1:0.
func New(cfg Config) (*Server, error) {
	s := newServer(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakellm: listening on 127.0.0.1:0: %w", err)
	}
	s.ln = ln
	s.URL = "http://" + ln.Addr().String()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.http.Serve(ln)
	}()
	return s, nil
}

// Start starts a server for a test and closes it when the test ends.
// Unless cfg.Logf is set, requests are logged with tb.Logf.
func Start(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	if cfg.Logf == nil {
		cfg.Logf = tb.Logf
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func newServer(cfg Config) *Server {
	if cfg.Script == nil {
		cfg.Script = ShellThenText(DefaultCommand, "DONE")
	}
	if cfg.Side == nil {
		cfg.Side = DefaultSide
	}
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"fake-model"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Server{cfg: cfg, script: cfg.Script, done: make(chan struct{})}
}

// Close stops the server; streams in progress are cut.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.http == nil {
		return nil
	}
	err := s.http.Close()
	<-s.done
	return err
}

// OpenAIBaseURL is the base URL for OpenAI-style clients (URL + "/v1").
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// SetScript replaces the script, e.g. between two runs of a test.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	s.script = sc
	s.mu.Unlock()
}

// Requests returns copies of the requests recorded so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Request, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// MainRequests are the recorded requests that offered tools (not side calls).
func (s *Server) MainRequests() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if !r.Side && r.API != APIUnknown && r.Method == http.MethodPost && r.Status != 0 {
			out = append(out, r)
		}
	}
	return out
}

// Reset forgets the recorded requests.
func (s *Server) Reset() {
	s.mu.Lock()
	s.reqs = nil
	s.mu.Unlock()
}

// Wait polls the recorded requests until cond holds or ctx ends, and says
// whether it held.
func (s *Server) Wait(ctx context.Context, cond func([]*Request) bool) bool {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if cond(s.Requests()) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// nextID is a deterministic id: prefix_000001, prefix_000002, … (one
// counter per server).
func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s_%06d", prefix, s.ids)
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.cfg.Logf != nil && !closed {
		s.cfg.Logf("fakellm: "+format, args...)
	}
}

// update changes a recorded request under the lock.
func (s *Server) update(r *Request, f func(*Request)) {
	s.mu.Lock()
	f(r)
	s.mu.Unlock()
}

// ServeHTTP records the request, finds its dialect and answers it.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	req := &Request{API: APIUnknown, Method: hr.Method, Path: hr.URL.Path, Query: redactQuery(hr.URL.Query()),
		Header: redactHeader(hr.Header)}
	if len(bytes.TrimSpace(body)) > 0 {
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			req.Body = m
		}
	}
	s.mu.Lock()
	req.Seq = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	script := s.script
	s.mu.Unlock()

	var d dialect
	op := ""
	for _, c := range dialects {
		if o, ok := c.match(hr.Method, hr.URL.Path); ok {
			d, op = c, o
			break
		}
	}
	if d == nil {
		s.update(req, func(r *Request) { r.Status = http.StatusNotFound })
		s.logf("#%d %s %s: no dialect serves this path → 404", req.Seq, hr.Method, hr.URL.Path)
		http.Error(w, "fakellm: no fake API at "+hr.URL.Path, http.StatusNotFound)
		return
	}
	s.update(req, func(r *Request) { r.API = d.api() })
	if op != opGenerate {
		body := d.extra(op, req, s.cfg.Models)
		s.update(req, func(r *Request) { r.Status = http.StatusOK })
		s.logf("#%d %s %s: %s %s", req.Seq, hr.Method, hr.URL.Path, d.api(), op)
		writeJSON(w, http.StatusOK, body)
		return
	}
	if req.Body == nil {
		s.fail(w, d, req, http.StatusBadRequest, "fakellm: the body is not a JSON object")
		return
	}
	if err := d.parse(req, hr); err != nil {
		s.fail(w, d, req, http.StatusBadRequest, "fakellm: "+err.Error())
		return
	}
	side := len(req.Tools) == 0
	s.update(req, func(r *Request) { r.Side = side })
	decide := script
	if side {
		decide = s.cfg.Side
	}
	rep := decide(req.clone())
	for k, v := range rep.Headers {
		w.Header().Set(k, v)
	}
	if rep.Status >= 400 {
		s.fail(w, d, req, rep.Status, rep.ErrorMessage)
		return
	}
	a := answer{req: req, rep: rep, created: s.cfg.Now().Unix(), id: s.nextID(d.idPrefix())}
	if rep.Shell != "" {
		t, ok := req.ShellTool()
		if !ok {
			names := make([]string, len(req.Tools))
			for i, t := range req.Tools {
				names[i] = t.Name
			}
			s.fail(w, d, req, http.StatusBadRequest, fmt.Sprintf("fakellm: the script asked for a shell call but no shell tool is offered (tools: %s)", strings.Join(names, ", ")))
			return
		}
		a.calls = append(a.calls, ToolCall{Name: t.Name, Args: ShellArgs(t, rep.Shell)})
	}
	a.calls = append(a.calls, rep.ToolCalls...)
	for i := range a.calls {
		if a.calls[i].ID == "" {
			a.calls[i].ID = s.nextID("call")
		}
	}
	s.logf("#%d %s %s: %s model=%q stream=%v tools=%d messages=%d side=%v → %s", req.Seq, hr.Method, hr.URL.Path,
		d.api(), req.Model, req.Stream, len(req.Tools), len(req.Messages), side, a.describe())
	if !sleep(hr.Context(), rep.Delay) {
		s.update(req, func(r *Request) { r.Aborted = true })
		return
	}
	s.update(req, func(r *Request) { r.Status = http.StatusOK })
	if !req.Stream {
		writeJSON(w, http.StatusOK, d.single(a))
		return
	}
	if !writeSSE(hr.Context(), w, d.stream(a)) {
		s.update(req, func(r *Request) { r.Aborted = true })
		s.logf("#%d: the client went away mid-stream", req.Seq)
	}
}

func (s *Server) fail(w http.ResponseWriter, d dialect, req *Request, status int, msg string) {
	s.update(req, func(r *Request) { r.Status = status })
	s.logf("#%d %s %s: %s → %d %s", req.Seq, req.Method, req.Path, d.api(), status, msg)
	writeJSON(w, status, d.failure(status, msg))
}

// The operations a dialect serves. opGenerate is a model call; the others
// are answered by dialect.extra.
const (
	opGenerate    = "generate"
	opModels      = "models"
	opCountTokens = "countTokens"
)

// dialect is one wire format.
type dialect interface {
	api() API
	// match says which operation method+path is, if this dialect serves it.
	match(method, path string) (op string, ok bool)
	// parse fills req's model, stream flag, messages, tools and schema from
	// req.Body and the URL.
	parse(req *Request, hr *http.Request) error
	// idPrefix prefixes the ids of responses (chatcmpl, resp, msg, …).
	idPrefix() string
	// stream is the SSE frames of a streamed answer.
	stream(a answer) []frame
	// single is the JSON body of a non-streamed answer.
	single(a answer) any
	// failure is the JSON body of an HTTP error.
	failure(status int, msg string) any
	// extra is the JSON body of any other operation (model lists, token counts).
	extra(op string, req *Request, models []string) any
}

// answer is a reply resolved against its request: tool calls have names,
// arguments and ids.
type answer struct {
	req     *Request
	rep     Reply
	calls   []ToolCall
	id      string
	created int64
}

func (a answer) describe() string {
	var parts []string
	if t := a.rep.text(); t != "" {
		parts = append(parts, fmt.Sprintf("text %q", truncate(t, 40)))
	}
	for _, c := range a.calls {
		parts = append(parts, fmt.Sprintf("call %s %s", c.Name, marshal(c.Args)))
	}
	if len(a.rep.Chunks) > 0 {
		parts = append(parts, fmt.Sprintf("%d chunks every %v", len(a.rep.Chunks), a.rep.ChunkDelay))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// frame is one SSE event and the pause before it.
type frame struct {
	delay time.Duration
	data  []byte
}

// dataFrame is an SSE "data:" event carrying v as JSON.
func dataFrame(delay time.Duration, v any) frame {
	return frame{delay: delay, data: append(append([]byte("data: "), marshal(v)...), "\n\n"...)}
}

// textFrames calls mk for every chunk of the reply's text, with the reply's
// chunk delay before all but the first.
func textFrames(rep Reply, mk func(chunk string) any) []frame {
	var out []frame
	for i, c := range rep.chunks() {
		d := time.Duration(0)
		if i > 0 {
			d = rep.ChunkDelay
		}
		out = append(out, dataFrame(d, mk(c)))
	}
	return out
}

// writeSSE writes frames, flushing each; false when the client went away.
func writeSSE(ctx context.Context, w http.ResponseWriter, frames []frame) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	for _, f := range frames {
		if !sleep(ctx, f.delay) {
			return false
		}
		if _, err := w.Write(f.data); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(marshal(v), '\n'))
}

// marshal is compact JSON without HTML escaping (commands hold > and &).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakellm: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errNoMessages is returned by parsers for a body without a conversation.
var errNoMessages = errors.New("the request has no messages")

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
