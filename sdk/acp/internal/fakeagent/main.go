// Command fakeagent is a fake ACP agent for avenor's tests: it speaks ACP v1
// on stdio like `opencode acp`, `gemini --acp` or Cursor's `agent acp`
// (runtime-protocols.md §2.5, §6.1, §6.2), with no model behind it. What it
// does in a turn depends on words in the prompt:
//
//	out.txt / write   a shell tool call that needs permission; allowed, it
//	                  writes out.txt (hello) in the session's cwd
//	SLOW              a slow stream (a chunk every 100 ms for 30 s) that
//	                  ends "cancelled" on session/cancel
//	RECALL            answers with the session's earlier prompts (resume)
//	QUESTION          cursor/ask_question (cursor profile)
//	PLAN              cursor/create_plan (cursor profile)
//	TODOS             cursor/update_todos, as a notification and a request
//	                  (cursor profile)
//	anything else     "ECHO: <prompt>"
//
// Environment:
//
//	FAKEACP_PROFILE   opencode (default), gemini or cursor
//	FAKEACP_STATE     directory keeping sessions for resume (default: a
//	                  directory under the system temp dir)
//	FAKEACP_LOG       file that gets every message received, one per line
//	FAKEACP_FAIL      exit-on-init | not-acp | ignore-cancel | no-auth
//	FAKEACP_NO_MODELS when set, session/new offers no model switch (an
//	                  older Gemini CLI, a Cursor build without configOptions)
//	FAKEACP_AGENTS    extra modes (OpenCode agents) to offer, space-separated
//
// The first line of FAKEACP_LOG records the argv and the environment
// variables of interest (OPENCODE_*, GEMINI_*, CURSOR_*).
// `fakeagent --version` prints a version line.
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

const version = "1.0.0"

type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcErr         `json:"error,omitempty"`
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type agent struct {
	profile string
	fail    string
	state   string
	logf    *os.File

	wmu sync.Mutex
	out *bufio.Writer

	mu       sync.Mutex
	nextID   int
	waiting  map[string]chan msg
	authed   bool
	sessions map[string]*session
	cancels  map[string]chan struct{} // per session: closed by session/cancel
}

type session struct {
	ID      string   `json:"id"`
	Cwd     string   `json:"cwd"`
	Prompts []string `json:"prompts"`
	Model   string   `json:"model"`
	Mode    string   `json:"mode"`
}

func main() {
	for _, a := range os.Args[1:] {
		if a == "--version" || a == "-v" {
			fmt.Printf("%s (fakeagent %s)\n", version, envOr("FAKEACP_PROFILE", "opencode"))
			return
		}
	}
	a := &agent{
		profile: envOr("FAKEACP_PROFILE", "opencode"), fail: os.Getenv("FAKEACP_FAIL"),
		state: envOr("FAKEACP_STATE", filepath.Join(os.TempDir(), "fakeacp-state")),
		out:   bufio.NewWriter(os.Stdout), waiting: map[string]chan msg{},
		sessions: map[string]*session{}, cancels: map[string]chan struct{}{},
	}
	if p := os.Getenv("FAKEACP_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			a.logf = f
			env := map[string]string{}
			for _, kv := range os.Environ() {
				k, v, _ := strings.Cut(kv, "=")
				for _, p := range []string{"OPENCODE_", "GEMINI_", "CURSOR_"} {
					if strings.HasPrefix(k, p) {
						env[k] = v
					}
				}
			}
			wd, _ := os.Getwd()
			b, _ := json.Marshal(map[string]any{"argv": os.Args[1:], "env": env, "cwd": wd})
			f.Write(append(b, '\n'))
		}
	}
	switch a.fail {
	case "not-acp":
		fmt.Println("Usage: agent [options] [command]")
		fmt.Println("Interactive mode starts here.")
		time.Sleep(time.Hour)
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		line := append([]byte(nil), in.Bytes()...)
		if a.logf != nil {
			a.logf.Write(append(append([]byte(nil), line...), '\n'))
		}
		var m msg
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			a.mu.Lock()
			ch := a.waiting[string(m.ID)]
			delete(a.waiting, string(m.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case m.Method != "" && m.ID != nil:
			if a.fail == "exit-on-init" && m.Method == "initialize" {
				fmt.Fprintln(os.Stderr, "error: unknown command 'acp' (fakeagent told to exit)")
				os.Exit(2)
			}
			if m.Method == "session/prompt" {
				// Armed in stream order, as a real agent is: a
				// session/cancel read right after the prompt cancels it.
				a.armCancel(m.Params)
			}
			go a.request(m)
		default:
			a.notification(m)
		}
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func (a *agent) send(m msg) {
	m.JSONRPC = "2.0"
	b, _ := json.Marshal(m)
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.out.Write(append(b, '\n'))
	a.out.Flush()
}

func (a *agent) reply(id json.RawMessage, result any) {
	b, _ := json.Marshal(result)
	a.send(msg{ID: id, Result: b})
}

func (a *agent) fault(id json.RawMessage, code int, text string) {
	a.send(msg{ID: id, Error: &rpcErr{Code: code, Message: text}})
}

func (a *agent) notify(method string, params any) {
	b, _ := json.Marshal(params)
	a.send(msg{Method: method, Params: b})
}

func (a *agent) update(sid string, upd map[string]any) {
	a.notify("session/update", map[string]any{"sessionId": sid, "update": upd})
}

// call sends a request to the client and waits for its answer. Cursor uses
// string ids; the others count from 0.
func (a *agent) call(method string, params any) msg {
	a.mu.Lock()
	n := a.nextID
	a.nextID++
	var id json.RawMessage
	if a.profile == "cursor" {
		id, _ = json.Marshal(fmt.Sprintf("req-%d-%s", n, randHex(4)))
	} else {
		id = json.RawMessage(fmt.Sprint(n))
	}
	ch := make(chan msg, 1)
	a.waiting[string(id)] = ch
	a.mu.Unlock()
	b, _ := json.Marshal(params)
	a.send(msg{ID: id, Method: method, Params: b})
	return <-ch
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (a *agent) notification(m msg) {
	if m.Method != "session/cancel" || a.fail == "ignore-cancel" {
		return
	}
	var p struct{ SessionID string }
	_ = json.Unmarshal(m.Params, &p)
	a.mu.Lock()
	// Left in place: the prompt that armed it may not have picked it up
	// yet, and removes it when it ends.
	if ch := a.cancels[p.SessionID]; ch != nil && !closed(ch) {
		close(ch)
	}
	a.mu.Unlock()
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (a *agent) armCancel(params json.RawMessage) {
	var p struct{ SessionID string }
	_ = json.Unmarshal(params, &p)
	a.mu.Lock()
	a.cancels[p.SessionID] = make(chan struct{})
	a.mu.Unlock()
}

func (a *agent) request(m msg) {
	var p map[string]any
	_ = json.Unmarshal(m.Params, &p)
	str := func(k string) string { s, _ := p[k].(string); return s }
	switch m.Method {
	case "initialize":
		a.reply(m.ID, a.initResult())
	case "authenticate":
		if a.fail == "no-auth" || str("methodId") != "cursor_login" {
			a.fault(m.ID, -32000, "Authentication required: run `agent login` (fake)")
			return
		}
		a.mu.Lock()
		a.authed = true
		a.mu.Unlock()
		a.reply(m.ID, map[string]any{})
	case "session/new":
		if !a.ready(m.ID) {
			return
		}
		s := &session{ID: a.newID(), Cwd: str("cwd"), Model: a.defaultModel(), Mode: a.defaultMode()}
		a.save(s)
		a.reply(m.ID, a.setup(s, true))
	case "session/load", "session/resume":
		if !a.ready(m.ID) {
			return
		}
		if m.Method == "session/resume" && a.profile != "opencode" {
			a.fault(m.ID, -32601, "Method not found: "+m.Method)
			return
		}
		s, err := a.load(str("sessionId"))
		if err != nil {
			a.fault(m.ID, -32002, "Resource not found: session "+str("sessionId"))
			return
		}
		if c := str("cwd"); c != "" {
			s.Cwd = c
		}
		replay := func() {
			for _, pr := range s.Prompts {
				a.update(s.ID, map[string]any{"sessionUpdate": "user_message_chunk", "content": text(pr)})
				a.update(s.ID, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text("(earlier answer)")})
			}
		}
		switch {
		case m.Method == "session/resume":
			a.reply(m.ID, a.setup(s, false))
		case a.profile == "gemini": // answers first, replays after
			a.reply(m.ID, a.setup(s, false))
			replay()
		default:
			replay()
			a.reply(m.ID, a.setup(s, false))
		}
	case "session/set_config_option":
		s, err := a.load(str("sessionId"))
		if err != nil {
			a.fault(m.ID, -32002, "no such session")
			return
		}
		switch str("configId") {
		case "model":
			if !contains(a.models(), str("value")) {
				a.fault(m.ID, -32602, "Invalid params: unknown model "+str("value"))
				return
			}
			s.Model = str("value")
		case "mode":
			if !contains(a.modes(), str("value")) {
				a.fault(m.ID, -32602, "Invalid params: unknown mode "+str("value"))
				return
			}
			s.Mode = str("value")
		default:
			a.fault(m.ID, -32602, "Invalid params: unknown config option")
			return
		}
		a.save(s)
		a.reply(m.ID, map[string]any{"configOptions": a.setup(s, false)["configOptions"]})
	case "session/set_mode", "session/set_model":
		if a.profile != "gemini" {
			a.fault(m.ID, -32601, "Method not found: "+m.Method)
			return
		}
		s, err := a.load(str("sessionId"))
		if err != nil {
			a.fault(m.ID, -32002, "no such session")
			return
		}
		if m.Method == "session/set_mode" {
			s.Mode = str("modeId")
		} else {
			s.Model = str("modelId")
		}
		a.save(s)
		a.reply(m.ID, map[string]any{})
	case "session/prompt":
		a.prompt(m.ID, str("sessionId"), p)
	default:
		a.fault(m.ID, -32601, "Method not found: "+m.Method)
	}
}

func (a *agent) ready(id json.RawMessage) bool {
	a.mu.Lock()
	ok := a.authed || a.profile != "cursor"
	a.mu.Unlock()
	if !ok {
		a.fault(id, -32000, "Authentication required")
	}
	return ok
}

func (a *agent) initResult() map[string]any {
	caps := map[string]any{"loadSession": true, "promptCapabilities": map[string]any{"image": true, "embeddedContext": true}}
	res := map[string]any{"protocolVersion": 1, "agentCapabilities": caps}
	switch a.profile {
	case "opencode":
		caps["sessionCapabilities"] = map[string]any{"close": map[string]any{}, "list": map[string]any{}, "resume": map[string]any{}}
		res["authMethods"] = []any{map[string]any{"id": "opencode-login", "name": "Login with opencode"}}
		res["agentInfo"] = map[string]any{"name": "OpenCode", "version": version + "-fake"}
	case "gemini":
		res["authMethods"] = []any{map[string]any{"id": "gemini-api-key", "name": "Use Gemini API key"}}
		res["agentInfo"] = map[string]any{"name": "gemini-cli", "title": "Gemini CLI", "version": version + "-fake"}
	case "cursor":
		caps["sessionCapabilities"] = map[string]any{"list": map[string]any{}}
		res["authMethods"] = []any{map[string]any{"id": "cursor_login", "name": "Cursor login"}}
	}
	return res
}

func (a *agent) models() []string {
	switch a.profile {
	case "gemini":
		return []string{"auto", "gemini-2.5-flash", "gemini-2.5-pro"}
	case "cursor":
		return []string{"auto", "gpt-5", "sonnet-4"}
	}
	return []string{"fake/fake-model", "fake/other-model"}
}

func (a *agent) modes() []string {
	switch a.profile {
	case "gemini":
		return []string{"default", "autoEdit", "yolo", "plan"}
	case "cursor":
		return []string{"agent", "plan", "ask"}
	}
	return append([]string{"build", "plan"}, strings.Fields(os.Getenv("FAKEACP_AGENTS"))...)
}

func (a *agent) defaultModel() string {
	if a.profile == "gemini" {
		return "gemini-2.5-flash"
	}
	return a.models()[0]
}
func (a *agent) defaultMode() string { return a.modes()[0] }

func (a *agent) setup(s *session, withID bool) map[string]any {
	res := map[string]any{}
	if withID {
		res["sessionId"] = s.ID
	}
	values := func(list []string) []any {
		var out []any
		for _, v := range list {
			out = append(out, map[string]any{"value": v, "name": v})
		}
		return out
	}
	if a.profile == "gemini" {
		var modes, models []any
		defer func() {
			if os.Getenv("FAKEACP_NO_MODELS") != "" {
				delete(res, "models")
			}
		}()
		for _, m := range a.modes() {
			modes = append(modes, map[string]any{"id": m, "name": m})
		}
		for _, m := range a.models() {
			models = append(models, map[string]any{"modelId": m, "name": m})
		}
		res["modes"] = map[string]any{"availableModes": modes, "currentModeId": s.Mode}
		res["models"] = map[string]any{"availableModels": models, "currentModelId": s.Model}
		return res
	}
	res["configOptions"] = []any{
		map[string]any{"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": s.Model, "options": values(a.models())},
		map[string]any{"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": s.Mode, "options": values(a.modes())},
	}
	if os.Getenv("FAKEACP_NO_MODELS") != "" {
		res["configOptions"] = res["configOptions"].([]any)[1:]
	}
	return res
}

func (a *agent) newID() string {
	switch a.profile {
	case "gemini":
		b := randHex(16)
		return b[:8] + "-" + b[8:12] + "-" + b[12:16] + "-" + b[16:20] + "-" + b[20:]
	case "cursor":
		return "cur-" + randHex(8)
	}
	return "ses_" + randHex(12)
}

func (a *agent) path(id string) string {
	return filepath.Join(a.state, a.profile+"-"+filepath.Base(id)+".json")
}

func (a *agent) save(s *session) {
	a.mu.Lock()
	a.sessions[s.ID] = s
	a.mu.Unlock()
	_ = os.MkdirAll(a.state, 0o755)
	b, _ := json.Marshal(s)
	_ = os.WriteFile(a.path(s.ID), b, 0o644)
}

func (a *agent) load(id string) (*session, error) {
	a.mu.Lock()
	s := a.sessions[id]
	a.mu.Unlock()
	if s != nil {
		return s, nil
	}
	b, err := os.ReadFile(a.path(id))
	if err != nil {
		return nil, err
	}
	s = &session{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.sessions[id] = s
	a.mu.Unlock()
	return s, nil
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
