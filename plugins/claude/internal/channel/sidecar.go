package channel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ProtocolVersion is the MCP version the sidecar answers initialize with
// (docs/backends.md#claude-channel-plugin-claude-experimental); Claude Code accepts it whatever it asked for.
const ProtocolVersion = "2024-11-05"

// ServerName is the sidecar's serverInfo.name.
const ServerName = "avenor"

// Channel capability keys Claude Code looks for (runtime-protocols.md §5.6).
const (
	CapChannel           = "claude/channel"
	CapChannelPermission = "claude/channel/permission"
)

// Notification methods of Claude Code's channel protocol (2.1.332's zod
// schemas: channel {content, meta?}, permission {request_id,
// behavior allow|deny}; permission_request comes the other way).
const (
	MethodChannel           = "notifications/claude/channel"
	MethodPermission        = "notifications/claude/channel/permission"
	MethodPermissionRequest = "notifications/claude/channel/permission_request"
)

// Sidecar timings.
const (
	sidecarHTTPTimeout = MaxPollWait + 8*time.Second // one broker call, a long-poll included
	retryMin           = 250 * time.Millisecond      // first wait after a failed broker call
	retryMax           = 5 * time.Second             // cap of the doubling wait
	toolsListWait      = 2 * time.Second             // initialized → register when tools/list never comes
)

// instructions tell the model what the channel is; Claude Code shows them
// with the server's tools.
const instructions = `This server connects you to avenor, the program that started this Claude Code session.
Messages from avenor arrive as <channel source="..." type="..."> events. type="continue" carries the
user's next request: do it. type="add_context" adds information; type="cancel" asks you to stop.
Report progress with avenor_report. When you have finished a request, call avenor_finish once with
status done, failed or blocked and a one-paragraph summary (and the files you changed).`

// SidecarConfig configures RunSidecar.
type SidecarConfig struct {
	RunID, Token, BrokerURL string
	// In and Out are the MCP stdio streams (Claude Code's pipes).
	In  io.Reader
	Out io.Writer
	// Log gets diagnostics (stderr, which Claude Code keeps in its MCP
	// logs); never the token. Default: none.
	Log hclog.Logger
	// Client calls the broker. Default: a client with sidecarHTTPTimeout.
	Client *http.Client
	// HeartbeatEvery defaults to HeartbeatInterval.
	HeartbeatEvery time.Duration
	// Version is serverInfo.version.
	Version string
}

type sidecar struct {
	cfg     SidecarConfig
	log     hclog.Logger
	writeMu sync.Mutex
	out     *bufio.Writer
	wg      sync.WaitGroup

	startMu      sync.Mutex
	started      bool
	pendingStart *time.Timer
}

// RunSidecar serves MCP on cfg.In/cfg.Out until In reaches EOF (Claude Code
// closes the pipe when it exits) or ctx is done, relaying between Claude
// and the broker. Background work (registration, polling, heartbeats,
// tool calls) stops before it returns.
func RunSidecar(ctx context.Context, cfg SidecarConfig) error {
	if cfg.RunID == "" || cfg.Token == "" || cfg.BrokerURL == "" {
		return errors.New("--run-id, --token, and --broker-url are required")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: sidecarHTTPTimeout}
	}
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = HeartbeatInterval
	}
	s := &sidecar{cfg: cfg, log: cfg.Log, out: bufio.NewWriter(cfg.Out)}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	cfg.BrokerURL = strings.TrimRight(cfg.BrokerURL, "/")
	s.cfg.BrokerURL = cfg.BrokerURL
	ctx, cancel := context.WithCancel(ctx)
	defer s.wg.Wait()
	defer cancel()
	defer func() {
		s.startMu.Lock()
		s.started = true // no start after return
		if s.pendingStart != nil {
			s.pendingStart.Stop()
		}
		s.startMu.Unlock()
	}()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	// The reader is not waited for: a read from stdin cannot be
	// interrupted, and it ends at EOF (or, after ctx, at its next line).
	go func() { readErr <- readFrames(ctx, cfg.In, lines) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return err
		case line := <-lines:
			s.handleLine(ctx, line)
		}
	}
}

// readFrames sends each line of r (at most MaxFrameBytes; longer lines are
// sent as nil, which answers a parse error) until EOF (nil) or ctx ends.
func readFrames(ctx context.Context, r io.Reader, lines chan<- []byte) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, MaxFrameBytes)
		if len(line) > 0 || errors.Is(err, errFrameTooLong) {
			select {
			case lines <- line:
			case <-ctx.Done():
				return nil
			}
		}
		switch {
		case err == nil, errors.Is(err, errFrameTooLong):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("reading MCP stdin: %w", err)
		}
	}
}

var errFrameTooLong = errors.New("frame too long")

// readLine reads one '\n'-terminated line without it; a line over max is
// consumed and dropped with errFrameTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, errFrameTooLong
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

func (s *sidecar) handleLine(ctx context.Context, line []byte) {
	if line == nil {
		s.write(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: codeParseError, Message: fmt.Sprintf("message over %d bytes", MaxFrameBytes)}})
		return
	}
	msgs, batch, err := parseFrame(line)
	if err != nil {
		code := codeParseError
		if errors.Is(err, errNotJSONRPC) {
			code = codeInvalidRequest
		}
		s.write(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: code, Message: err.Error()}})
		return
	}
	if batch {
		// Batches are answered as one array, in order; requests in them
		// are handled inline (Claude Code does not batch).
		var out []rpcMessage
		for _, m := range msgs {
			if resp, ok := s.handle(ctx, m, false); ok {
				out = append(out, resp)
			}
		}
		if len(out) > 0 {
			s.write(out)
		}
		return
	}
	if resp, ok := s.handle(ctx, msgs[0], true); ok {
		s.write(resp)
	}
}

// handle answers one message; async lets slow tool calls run in the
// background (their answers are written when ready).
func (s *sidecar) handle(ctx context.Context, m rpcMessage, async bool) (rpcMessage, bool) {
	if isNotification(m) {
		s.notification(ctx, m)
		return rpcMessage{}, false
	}
	if !isRequest(m) {
		return rpcMessage{}, false // a response to nothing we asked
	}
	reply := func(result any, err *rpcError) rpcMessage {
		r := rpcMessage{JSONRPC: "2.0", ID: m.ID, Error: err}
		if err == nil {
			r.Result, _ = json.Marshal(result)
		}
		return r
	}
	switch m.Method {
	case "initialize":
		return reply(map[string]any{
			"protocolVersion": ProtocolVersion,
			"capabilities": map[string]any{
				"experimental": map[string]any{CapChannel: map[string]any{}, CapChannelPermission: map[string]any{}},
				"tools":        map[string]any{},
			},
			"serverInfo":   map[string]any{"name": ServerName, "version": s.cfg.Version},
			"instructions": instructions,
		}, nil), true
	case "ping":
		return reply(map[string]any{}, nil), true
	case "tools/list":
		// Claude Code lists the tools right after initialized: from now on
		// its requests to the model offer them, so the run is ready.
		s.startOnce(ctx, 0)
		return reply(map[string]any{"tools": toolDefs}, nil), true
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return reply(nil, &rpcError{Code: codeInvalidParams, Message: "tools/call params: " + err.Error()}), true
		}
		if !async {
			res, rerr := s.callTool(ctx, p.Name, p.Arguments)
			return reply(res, rerr), true
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			res, rerr := s.callTool(ctx, p.Name, p.Arguments)
			s.write(reply(res, rerr))
		}()
		return rpcMessage{}, false
	}
	return reply(nil, &rpcError{Code: codeMethodNotFound, Message: "method not found: " + m.Method}), true
}

func (s *sidecar) notification(ctx context.Context, m rpcMessage) {
	switch m.Method {
	case "notifications/initialized":
		// Claude Code has seen our capabilities, so channel notifications
		// reach the model. Registration waits for tools/list too (the
		// model must be offered avenor_finish), but not forever: a client
		// that never lists tools is registered after toolsListWait.
		s.startOnce(ctx, toolsListWait)
	case MethodPermissionRequest:
		var p PermissionRequest
		if err := json.Unmarshal(m.Params, &p); err != nil || p.RequestID == "" {
			s.log.Warn("ignoring a malformed channel permission_request", "error", err)
			return
		}
		p.Auth = s.auth()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.post(ctx, "/permission_request", p, nil); err != nil {
				s.log.Error("forwarding a permission request to avenor failed", "request_id", p.RequestID, "error", err)
			}
		}()
	}
}

// startOnce starts run (registration, polling, heartbeats) once, after
// delay unless ctx ends first.
func (s *sidecar) startOnce(ctx context.Context, delay time.Duration) {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.started {
		return
	}
	if delay > 0 {
		if s.pendingStart == nil {
			s.pendingStart = time.AfterFunc(delay, func() { s.startOnce(ctx, 0) })
		}
		return
	}
	s.started = true
	if s.pendingStart != nil {
		s.pendingStart.Stop()
	}
	if ctx.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx)
	}()
}

func (s *sidecar) auth() Auth { return Auth{RunID: s.cfg.RunID, Token: s.cfg.Token} }

// run registers with the broker, then polls control messages and sends
// heartbeats until ctx ends.
func (s *sidecar) run(ctx context.Context) {
	for wait := retryMin; ; wait = min(2*wait, retryMax) {
		err := s.post(ctx, "/register", RegisterRequest{Auth: s.auth()}, nil)
		if err == nil {
			break
		}
		s.log.Warn("registering with the avenor broker failed; retrying", "run_id", s.cfg.RunID, "error", err, "in", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for sleep(ctx, s.cfg.HeartbeatEvery) {
			if err := s.post(ctx, "/heartbeat", s.auth(), nil); err != nil && ctx.Err() == nil {
				s.log.Warn("heartbeat failed", "run_id", s.cfg.RunID, "error", err)
			}
		}
	}()
	wait := retryMin
	for ctx.Err() == nil {
		var resp PollResponse
		err := s.post(ctx, "/poll-control", PollRequest{Auth: s.auth(), WaitMS: int(MaxPollWait / time.Millisecond)}, &resp)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("polling the avenor broker failed; retrying", "run_id", s.cfg.RunID, "error", err, "in", wait)
			if !sleep(ctx, wait) {
				return
			}
			wait = min(2*wait, retryMax)
			continue
		}
		wait = retryMin
		for _, c := range resp.Messages {
			s.push(c)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// push turns a control message into Claude's notification.
func (s *sidecar) push(c Control) {
	if c.Type == ControlPermissionDecision {
		var d PermissionDecision
		if err := json.Unmarshal(c.Payload, &d); err != nil || d.RequestID == "" {
			s.log.Error("dropping a malformed permission decision", "ctrl_id", c.ID, "error", err)
			return
		}
		s.notify(MethodPermission, map[string]any{"request_id": d.RequestID, "behavior": d.Behavior})
		return
	}
	meta := map[string]string{"run_id": s.cfg.RunID, "ctrl_id": c.ID, "type": c.Type}
	if c.FromRunID != "" {
		meta["from_run_id"] = c.FromRunID
	}
	s.notify(MethodChannel, map[string]any{"content": controlContent(c), "meta": meta})
}

// controlContent is what the model reads: the payload's message (or
// context) when it has one, else the payload as JSON, else the type.
func controlContent(c Control) string {
	var p struct {
		Message string `json:"message"`
		Context string `json:"context"`
	}
	if json.Unmarshal(c.Payload, &p) == nil {
		if p.Message != "" {
			return p.Message
		}
		if p.Context != "" {
			return p.Context
		}
	}
	if t := bytes.TrimSpace(c.Payload); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("{}")) {
		return string(t)
	}
	return c.Type
}

func (s *sidecar) notify(method string, params any) {
	raw, _ := json.Marshal(params)
	s.write(rpcMessage{JSONRPC: "2.0", Method: method, Params: raw})
}

// write sends one message (or batch) as one line.
func (s *sidecar) write(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encoding an MCP message", "error", err)
		return
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, _ = s.out.Write(data)
	_ = s.out.WriteByte('\n')
	if err := s.out.Flush(); err != nil {
		s.log.Debug("writing to MCP stdout failed", "error", err)
	}
}

// post calls the broker; a non-2xx answer is an error carrying the
// broker's message (which never contains the token).
func (s *sidecar) post(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.BrokerURL+path, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e errorBody
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return fmt.Errorf("broker %s: %s (HTTP %d)", path, e.Error, resp.StatusCode)
		}
		return fmt.Errorf("broker %s: HTTP %d", path, resp.StatusCode)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
