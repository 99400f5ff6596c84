//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// acpAgent is a real CLI started as an ACP agent and driven directly over
// NDJSON stdio, without avenor: the smallest client that gets a prompt
// through (initialize, session/new, session/prompt, permission answers,
// session/cancel).
type acpAgent struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	done   chan struct{} // the reader ended (stdout closed)

	// permit answers session/request_permission: the optionId to select,
	// or "" for the cancelled outcome.
	permit func(options []acpOption) string

	mu      sync.Mutex
	nextID  int
	pending map[string]chan acpMsg
	frames  []string // every frame, "-> " sent, "<- " received
	updates []map[string]any
	perms   int
}

type acpMsg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type acpOption struct {
	OptionID string `json:"optionId"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// pickKind selects the first option whose kind starts with prefix.
func pickKind(prefix string) func([]acpOption) string {
	return func(opts []acpOption) string {
		for _, o := range opts {
			if strings.HasPrefix(o.Kind, prefix) {
				return o.OptionID
			}
		}
		return ""
	}
}

func startACP(w *world, permit func([]acpOption) string) *acpAgent {
	w.t.Helper()
	a := &acpAgent{t: w.t, permit: permit, pending: map[string]chan acpMsg{}, done: make(chan struct{})}
	a.cmd = exec.Command(w.rt.bin(), w.rt.acpArgs(w.work)...)
	a.cmd.Dir, a.cmd.Env = w.work, w.env
	a.cmd.Stderr = &a.stderr
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		w.t.Fatal(err)
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		w.t.Fatalf("starting %s: %v", w.rt.bin(), err)
	}
	go a.read(stdout)
	w.t.Cleanup(a.close)
	return a
}

func (a *acpAgent) read(r io.Reader) {
	defer close(a.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		a.mu.Lock()
		a.frames = append(a.frames, "<- "+string(line))
		a.mu.Unlock()
		var m acpMsg
		if err := json.Unmarshal(line, &m); err != nil {
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			a.serve(m)
		case m.Method == "session/update":
			var p struct {
				Update map[string]any `json:"update"`
			}
			_ = json.Unmarshal(m.Params, &p)
			a.mu.Lock()
			a.updates = append(a.updates, p.Update)
			a.mu.Unlock()
		case m.Method == "":
			a.mu.Lock()
			ch := a.pending[string(m.ID)]
			delete(a.pending, string(m.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// serve answers an agent→client request.
func (a *acpAgent) serve(m acpMsg) {
	if m.Method != "session/request_permission" {
		a.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		return
	}
	var p struct {
		Options []acpOption `json:"options"`
	}
	_ = json.Unmarshal(m.Params, &p)
	a.mu.Lock()
	a.perms++
	a.mu.Unlock()
	outcome := map[string]any{"outcome": "cancelled"}
	if id := a.permit(p.Options); id != "" {
		outcome = map[string]any{"outcome": "selected", "optionId": id}
	}
	a.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"outcome": outcome}})
}

func (a *acpAgent) send(v any) {
	b, _ := json.Marshal(v)
	a.mu.Lock()
	a.frames = append(a.frames, "-> "+string(b))
	a.mu.Unlock()
	_, _ = a.stdin.Write(append(b, '\n'))
}

// call sends a request and waits for its response.
func (a *acpAgent) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	a.mu.Lock()
	a.nextID++
	id := fmt.Sprint(a.nextID)
	ch := make(chan acpMsg, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.send(map[string]any{"jsonrpc": "2.0", "id": a.nextID, "method": method, "params": params})
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-a.done:
		return nil, fmt.Errorf("%s: the agent closed stdout; stderr: %s", method, tail(a.stderr.String(), 2000))
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (a *acpAgent) notify(method string, params any) {
	a.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// newSession runs initialize and session/new and returns the session id.
func (a *acpAgent) newSession(ctx context.Context, dir string) (string, error) {
	if _, err := a.call(ctx, "initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "avenor-e2e", "version": "0.0.1"}}); err != nil {
		return "", err
	}
	res, err := a.call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}})
	if err != nil {
		return "", err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
		return "", fmt.Errorf("session/new: no sessionId in %s", res)
	}
	return r.SessionID, nil
}

// prompt sends one prompt and returns the stop reason.
func (a *acpAgent) prompt(ctx context.Context, session, text string) (string, error) {
	res, err := a.call(ctx, "session/prompt", map[string]any{"sessionId": session,
		"prompt": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		return "", err
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(res, &r)
	return r.StopReason, nil
}

// sawUpdate says whether a session/update of this kind arrived.
func (a *acpAgent) sawUpdate(kind string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range a.updates {
		if u["sessionUpdate"] == kind {
			return true
		}
	}
	return false
}

func (a *acpAgent) permissionRequests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.perms
}

// transcript is every frame so far, long lines cut.
func (a *acpAgent) transcript() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	for _, f := range a.frames {
		b.WriteString(truncateLine(f, 400))
		b.WriteByte('\n')
	}
	return b.String()
}

// close ends the agent as a client would: stdin EOF, then a bounded wait,
// then SIGKILL to its process group.
func (a *acpAgent) close() {
	_ = a.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		a.t.Logf("%s did not exit within 10 s of stdin EOF; killing its group", a.cmd.Path)
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	// Helpers the CLI left behind in its group.
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
}

func truncateLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
