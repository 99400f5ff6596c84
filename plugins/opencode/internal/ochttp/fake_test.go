package ochttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer is an `opencode serve` replaying the documented sequences of
// runtime-protocols.md §2.4 and real-runtimes.md ("opencode serve"). The
// prompt text picks the scenario:
//
//	"permission" a bash tool that asks; the reply decides what follows
//	"Count"      a long stream of deltas until aborted
//	"fail"       session.error APIError, the answer carries the error
//	"unknown"    an injected event type nobody knows, then DONE
//	"cut"        the SSE stream is cut mid-turn; text goes on while it is down
//	otherwise    DONE
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	subs     map[chan []byte]chan struct{} // subscriber → its kill switch
	down     bool                          // /event refused
	sessions map[string][]message
	replies  map[string]chan string // permission id → its reply
	aborts   map[string]chan struct{}
	calls    []string // method path?query of every call
	n        int
	password string
	reply    string // the last permission reply
}

func (f *fakeServer) lastReply() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reply
}

func newFakeServer(t *testing.T) *fakeServer {
	f := newFakeState(t)
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.cut()
		f.srv.Close()
	})
	return f
}

// newFakeState is a fakeServer without its HTTP server, for tests that
// serve it their own way.
func newFakeState(t *testing.T) *fakeServer {
	return &fakeServer{t: t, subs: map[chan []byte]chan struct{}{}, sessions: map[string][]message{},
		replies: map[string]chan string{}, aborts: map[string]chan struct{}{}}
}

func (f *fakeServer) URL() string { return f.srv.URL }

func (f *fakeServer) nextID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return fmt.Sprintf("%s_%04d", prefix, f.n)
}

func (f *fakeServer) callList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeServer) emit(typ string, props any) {
	b, _ := json.Marshal(map[string]any{"type": typ, "properties": props})
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- b:
		default:
			f.t.Errorf("fake: subscriber queue full")
		}
	}
}

// cut closes every SSE stream.
func (f *fakeServer) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch, kill := range f.subs {
		close(kill)
		delete(f.subs, ch)
	}
}

func (f *fakeServer) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	call := r.Method + " " + r.URL.Path
	if r.URL.RawQuery != "" {
		call += "?" + r.URL.RawQuery
	}
	f.calls = append(f.calls, call)
	pw := f.password
	f.mu.Unlock()
	if pw != "" {
		if u, p, ok := r.BasicAuth(); !ok || u != "opencode" || p != pw {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	path := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/global/health":
		writeJSON(w, map[string]any{"healthy": true, "version": "1.18.33-fake"})
	case r.URL.Path == "/event":
		f.events(w, r)
	case r.Method == "POST" && r.URL.Path == "/session":
		id := f.nextID("ses")
		f.mu.Lock()
		f.sessions[id] = nil
		f.mu.Unlock()
		writeJSON(w, map[string]any{"id": id, "version": "1.18.33-fake"})
		// The pitfall: an idle right after creation, before any busy.
		f.emit("session.idle", map[string]any{"sessionID": id})
	case len(path) == 2 && path[0] == "session" && r.Method == "GET":
		f.mu.Lock()
		_, ok := f.sessions[path[1]]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		writeJSON(w, map[string]any{"id": path[1]})
	case len(path) == 3 && path[0] == "session" && path[2] == "message" && r.Method == "GET":
		f.mu.Lock()
		msgs := append([]message(nil), f.sessions[path[1]]...)
		f.mu.Unlock()
		writeJSON(w, msgs)
	case len(path) == 3 && path[0] == "session" && path[2] == "message" && r.Method == "POST":
		var body struct {
			Parts []struct{ Text string } `json:"parts"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		text := ""
		if len(body.Parts) > 0 {
			text = body.Parts[0].Text
		}
		writeJSON(w, f.turn(path[1], text))
	case len(path) == 3 && path[0] == "session" && path[2] == "abort":
		f.mu.Lock()
		if ch, ok := f.aborts[path[1]]; ok {
			close(ch)
			delete(f.aborts, path[1])
		}
		f.mu.Unlock()
		writeJSON(w, true)
	case len(path) == 3 && path[0] == "permission" && path[2] == "reply":
		var body struct{ Reply string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		ch := f.replies[path[1]]
		f.mu.Unlock()
		if ch == nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		f.mu.Lock()
		f.reply = body.Reply
		f.mu.Unlock()
		ch <- body.Reply
		writeJSON(w, true)
	default:
		http.Error(w, "no route", http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) events(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.down {
		f.mu.Unlock()
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	ch, kill := make(chan []byte, 4096), make(chan struct{})
	f.subs[ch] = kill
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	fmt.Fprint(w, "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n")
	// Noise of other sessions and of the server.
	fmt.Fprint(w, ": a comment\n\nevent: message\ndata: {\"type\":\"plugin.added\",\"properties\":{}}\n\n")
	fl.Flush()
	for {
		select {
		case b := <-ch:
			fmt.Fprintf(w, "data: %s\n\n", b)
			fl.Flush()
		case <-kill:
			return
		case <-r.Context().Done():
			f.mu.Lock()
			delete(f.subs, ch)
			f.mu.Unlock()
			return
		}
	}
}

// record stores a message in the history and announces it.
func (f *fakeServer) record(sid string, m message) {
	f.mu.Lock()
	msgs := f.sessions[sid]
	found := false
	for i := range msgs {
		if msgs[i].Info.ID == m.Info.ID {
			msgs[i], found = m, true
		}
	}
	if !found {
		msgs = append(msgs, m)
	}
	f.sessions[sid] = msgs
	f.mu.Unlock()
	f.emit("message.updated", map[string]any{"sessionID": sid, "info": m.Info})
}

// putPart updates a part in the history and sends its snapshot.
func (f *fakeServer) putPart(sid string, m *message, p part, announce bool) {
	p.SessionID, p.MessageID = sid, m.Info.ID
	found := false
	for i := range m.Parts {
		if m.Parts[i].ID == p.ID {
			m.Parts[i], found = p, true
		}
	}
	if !found {
		m.Parts = append(m.Parts, p)
	}
	f.mu.Lock()
	for i, mm := range f.sessions[sid] {
		if mm.Info.ID == m.Info.ID {
			f.sessions[sid][i].Parts = append([]part(nil), m.Parts...)
		}
	}
	f.mu.Unlock()
	if announce {
		f.emit("message.part.updated", map[string]any{"sessionID": sid, "part": p})
	}
}

// text streams a text part of m as deltas (announced or not).
func (f *fakeServer) text(sid string, m *message, pid string, chunks []string, announce bool) {
	p := part{ID: pid, Type: "text"}
	f.putPart(sid, m, p, announce)
	for _, c := range chunks {
		p.Text += c
		f.putPart(sid, m, p, false)
		if announce {
			f.emit("message.part.delta", map[string]any{"sessionID": sid, "messageID": m.Info.ID, "partID": pid, "field": "text", "delta": c})
		}
	}
	if announce {
		f.emit("message.part.updated", map[string]any{"sessionID": sid, "part": p})
	}
}

func (f *fakeServer) status(sid, st string) {
	f.emit("session.status", map[string]any{"sessionID": sid, "status": map[string]any{"type": st}})
	if st == "idle" {
		f.emit("session.idle", map[string]any{"sessionID": sid})
	}
}

func (f *fakeServer) assistant(sid string) *message {
	m := &message{Info: messageInfo{ID: f.nextID("msg"), SessionID: sid, Role: "assistant", Tokens: &tokens{Input: 10, Output: 5}}}
	f.record(sid, *m)
	return m
}

func (f *fakeServer) finishMsg(sid string, m *message, finish string) {
	m.Info.Finish = finish
	f.record(sid, *m)
}

// turn plays one prompt and returns the blocking answer.
func (f *fakeServer) turn(sid, text string) message {
	abort := make(chan struct{})
	f.mu.Lock()
	f.aborts[sid] = abort
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.aborts, sid)
		f.mu.Unlock()
	}()
	f.status(sid, "idle") // the stale idle before busy
	user := message{Info: messageInfo{ID: f.nextID("msg"), SessionID: sid, Role: "user"}}
	f.record(sid, user)
	f.putPart(sid, &user, part{ID: f.nextID("prt"), Type: "text", Text: text}, true)
	f.status(sid, "busy")
	aborted := func(m *message) message {
		m.Info.Error = &apiError{Name: "MessageAbortedError"}
		m.Info.Error.Data.Message = "Aborted"
		f.record(sid, *m)
		f.emit("session.error", map[string]any{"sessionID": sid, "error": m.Info.Error})
		f.status(sid, "idle")
		return *m
	}
	switch {
	case strings.Contains(text, "permission"):
		m := f.assistant(sid)
		tool := part{ID: f.nextID("prt"), Type: "tool", CallID: "call_1", Tool: "bash",
			State: &toolState{Status: "pending", Input: json.RawMessage(`{}`)}}
		f.putPart(sid, m, tool, true)
		tool.State = &toolState{Status: "running", Input: json.RawMessage(`{"command":"echo hello > out.txt"}`)}
		f.putPart(sid, m, tool, true)
		pid := f.nextID("per")
		ch := make(chan string, 1)
		f.mu.Lock()
		f.replies[pid] = ch
		f.mu.Unlock()
		f.emit("permission.asked", map[string]any{"id": pid, "sessionID": sid, "permission": "bash",
			"patterns": []string{"echo hello > out.txt"}, "metadata": map[string]any{"command": "echo hello > out.txt"},
			"always": []string{"echo *"}, "tool": map[string]any{"messageID": m.Info.ID, "callID": "call_1"}})
		var reply string
		select {
		case reply = <-ch:
		case <-abort:
			return aborted(m)
		}
		f.emit("permission.replied", map[string]any{"sessionID": sid, "requestID": pid, "reply": reply})
		if reply == "reject" {
			tool.State = &toolState{Status: "error", Input: tool.State.Input, Error: "The user rejected permission to use this specific tool call."}
		} else {
			tool.State = &toolState{Status: "completed", Input: tool.State.Input, Output: "(no output)", Title: "echo hello > out.txt"}
		}
		f.putPart(sid, m, tool, true)
		f.finishMsg(sid, m, "tool-calls")
		f.status(sid, "idle") // between steps: not the end of the turn
		f.status(sid, "busy")
		m2 := f.assistant(sid)
		word := "DONE"
		if reply == "reject" {
			word = "REJECTED"
		}
		f.text(sid, m2, f.nextID("prt"), []string{word}, true)
		f.finishMsg(sid, m2, "stop")
		f.status(sid, "idle")
		return *m2
	case strings.Contains(text, "Count"):
		m := f.assistant(sid)
		pid := f.nextID("prt")
		f.putPart(sid, m, part{ID: pid, Type: "text"}, true)
		for i := 0; i < 150; i++ {
			select {
			case <-abort:
				return aborted(m)
			case <-time.After(20 * time.Millisecond):
			}
			f.emit("message.part.delta", map[string]any{"sessionID": sid, "messageID": m.Info.ID, "partID": pid, "field": "text", "delta": "one\n"})
		}
		f.finishMsg(sid, m, "stop")
		f.status(sid, "idle")
		return *m
	case strings.Contains(text, "fail"):
		m := f.assistant(sid)
		m.Info.Error = &apiError{Name: "APIError"}
		m.Info.Error.Data.Message = "the model is down"
		f.record(sid, *m)
		f.emit("session.error", map[string]any{"sessionID": sid, "error": m.Info.Error})
		f.status(sid, "idle")
		return *m
	case strings.Contains(text, "cut"):
		m := f.assistant(sid)
		pid := f.nextID("prt")
		f.text(sid, m, pid, []string{"Hello "}, true)
		time.Sleep(50 * time.Millisecond)
		f.mu.Lock()
		f.down = true
		f.mu.Unlock()
		f.cut()
		// Sent while nobody listens: only the history keeps it.
		p := m.Parts[0]
		p.Text += "world"
		f.putPart(sid, m, p, false)
		f.finishMsg(sid, m, "tool-calls")
		f.mu.Lock()
		f.down = false
		f.mu.Unlock()
		deadline := time.Now().Add(5 * time.Second)
		for f.subscribers() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		m2 := f.assistant(sid)
		f.text(sid, m2, f.nextID("prt"), []string{"DO", "NE"}, true)
		f.finishMsg(sid, m2, "stop")
		f.status(sid, "idle")
		return *m2
	}
	m := f.assistant(sid)
	if strings.Contains(text, "unknown") {
		f.emit("brand.new.event", map[string]any{"sessionID": sid})
		// The count is the stream's so far: let the stream deliver it.
		time.Sleep(100 * time.Millisecond)
	}
	f.text(sid, m, f.nextID("prt"), []string{"DO", "NE"}, true)
	f.finishMsg(sid, m, "stop")
	f.status(sid, "idle")
	return *m
}
