package appserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary doubles as a fake `codex`: started with FakeModeEnv set
// (the plugin runs it as `<test binary> app-server`), it speaks the
// app-server protocol instead of running tests.
//
//   - "transcript:<file>" replays a transcript recorded from the real codex
//     0.171.0 (testdata/*.transcript: "-> " lines are what the client sent,
//     "<- " lines what codex answered). A "-> " line waits for the client's
//     next message and checks its method, or for a response its decision;
//     responses to the client's requests get the client's actual ids.
//   - "auto" behaves like codex for the conformance kit: a prompt
//     mentioning "permission" asks one approval, "Count slowly" streams
//     until interrupted, anything else answers "ok". Threads are kept in
//     $CODEX_HOME/threads so a fresh process can resume them.
//   - "exit" is a codex without app-server: it exits 2 at once.
//
// Every client line is appended to FakeLogEnv's file when set.
const (
	FakeModeEnv = "AVENOR_FAKE_CODEX"
	FakeLogEnv  = "AVENOR_FAKE_CODEX_LOG"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(FakeModeEnv); mode != "" {
		os.Exit(fakeCodex(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeCodex(mode string, args []string) int {
	if len(args) > 0 && args[0] == "--version" {
		fmt.Println("codex-cli " + TestedVersion)
		return 0
	}
	if mode == "exit" || len(args) == 0 || args[0] != "app-server" {
		fmt.Fprintln(os.Stderr, "error: unrecognized subcommand 'app-server'")
		return 2
	}
	f := &fake{in: bufio.NewReaderSize(os.Stdin, 1<<20), out: os.Stdout}
	if p := os.Getenv(FakeLogEnv); p != "" {
		lf, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			defer lf.Close()
			f.log = lf
		}
	}
	if file, ok := strings.CutPrefix(mode, "transcript:"); ok {
		return f.replay(file)
	}
	return f.auto()
}

type fake struct {
	in  *bufio.Reader
	out io.Writer
	log io.Writer
	wmu sync.Mutex
}

// msg is one app-server message.
type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (f *fake) read() (msg, []byte, error) {
	line, err := f.in.ReadBytes('\n')
	if err != nil {
		return msg{}, nil, err
	}
	if f.log != nil {
		_, _ = f.log.Write(line)
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		return msg{}, line, fmt.Errorf("fake codex: client sent a line that is not JSON: %q", line)
	}
	if bytes.Contains(line, []byte(`"jsonrpc"`)) {
		return m, line, fmt.Errorf("fake codex: client sent a jsonrpc field, codex's protocol has none: %s", line)
	}
	return m, line, nil
}

func (f *fake) write(v any) {
	b, _ := json.Marshal(v)
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, _ = f.out.Write(append(b, '\n'))
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "fake codex: "+format+"\n", args...)
	return 3
}

func (f *fake) replay(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return fail("%v", err)
	}
	ids := map[string]json.RawMessage{} // recorded client id → actual
	for n, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "-> "):
			var want msg
			if err := json.Unmarshal([]byte(line[3:]), &want); err != nil {
				return fail("%s:%d: %v", file, n+1, err)
			}
			got, _, err := f.read()
			if err == io.EOF {
				return 0 // the client went away: stop as codex does
			}
			if err != nil {
				return fail("%v", err)
			}
			if want.Method != got.Method {
				return fail("%s:%d: client sent %q, the transcript has %q", file, n+1, got.Method, want.Method)
			}
			if want.Method != "" && want.ID != nil {
				ids[string(want.ID)] = got.ID
			}
			if want.Method == "" {
				var w, g struct {
					Decision json.RawMessage `json:"decision"`
				}
				_ = json.Unmarshal(want.Result, &w)
				_ = json.Unmarshal(got.Result, &g)
				if string(compact(w.Decision)) != string(compact(g.Decision)) {
					return fail("%s:%d: client decided %s, the transcript has %s", file, n+1, g.Decision, w.Decision)
				}
			}
		case strings.HasPrefix(line, "<- "):
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line[3:]), &m); err != nil {
				return fail("%s:%d: %v", file, n+1, err)
			}
			if _, isReq := m["method"]; !isReq && m["id"] != nil {
				if id, ok := ids[string(m["id"])]; ok {
					m["id"] = id
				}
			}
			f.write(m)
		}
	}
	_, _ = io.Copy(io.Discard, f.in) // codex exits when its stdin closes
	return 0
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// auto is the behavioural fake for the conformance kit.
func (f *fake) auto() int {
	home := os.Getenv("CODEX_HOME")
	threadsFile := filepath.Join(home, "threads")
	var thread string
	var mu sync.Mutex
	nextReq := 0
	answers := map[string]chan msg{}
	var interrupt chan struct{}
	turnN := 0
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m, _, err := f.read()
		if err == io.EOF {
			mu.Lock()
			if interrupt != nil {
				close(interrupt)
				interrupt = nil
			}
			mu.Unlock()
			return 0
		}
		if err != nil {
			return fail("%v", err)
		}
		if m.Method == "" { // a response to our request
			mu.Lock()
			ch := answers[string(m.ID)]
			delete(answers, string(m.ID))
			mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		reply := func(result any) { f.write(map[string]any{"id": m.ID, "result": result}) }
		var p struct {
			ThreadID string `json:"threadId"`
			Input    []struct {
				Text string `json:"text"`
			} `json:"input"`
		}
		_ = json.Unmarshal(m.Params, &p)
		switch m.Method {
		case "initialize":
			reply(map[string]any{"userAgent": "avenor/" + TestedVersion + " (fake)", "codexHome": home})
		case "initialized":
		case "thread/start":
			thread = fmt.Sprintf("thr-%d", time.Now().UnixNano())
			reply(map[string]any{"thread": map[string]any{"id": thread}})
		case "thread/resume":
			known, _ := os.ReadFile(threadsFile)
			if !strings.Contains(string(known), p.ThreadID+"\n") {
				f.write(map[string]any{"id": m.ID, "error": map[string]any{"code": -32600, "message": "no rollout found for thread id " + p.ThreadID}})
				continue
			}
			thread = p.ThreadID
			reply(map[string]any{"thread": map[string]any{"id": thread}})
		case "turn/interrupt":
			reply(map[string]any{})
			mu.Lock()
			if interrupt != nil {
				close(interrupt)
				interrupt = nil
			}
			mu.Unlock()
		case "turn/start":
			turnN++
			turn := fmt.Sprintf("turn-%d", turnN)
			reply(map[string]any{"turn": map[string]any{"id": turn, "status": "inProgress", "items": []any{}}})
			stop := make(chan struct{})
			mu.Lock()
			interrupt = stop
			mu.Unlock()
			text := ""
			if len(p.Input) > 0 {
				text = p.Input[0].Text
			}
			note := func(method string, params map[string]any) {
				params["threadId"], params["turnId"] = thread, turn
				f.write(map[string]any{"method": method, "params": params})
			}
			ask := func() (msg, bool) {
				mu.Lock()
				id := json.RawMessage(fmt.Sprint(nextReq))
				nextReq++
				ch := make(chan msg, 1)
				answers[string(id)] = ch
				mu.Unlock()
				f.write(map[string]any{"id": id, "method": "item/commandExecution/requestApproval", "params": map[string]any{
					"threadId": thread, "turnId": turn, "itemId": "call_1", "command": "touch avenor-conformance.txt",
					"availableDecisions": []any{"accept", "acceptForSession", "decline", "cancel"}}})
				select {
				case a := <-ch:
					return a, true
				case <-stop:
					return msg{}, false
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				status := "completed"
				msgText := "ok"
				switch {
				case strings.Contains(text, "permission"):
					note("item/started", map[string]any{"item": map[string]any{"type": "commandExecution", "id": "call_1", "command": "touch avenor-conformance.txt", "status": "inProgress"}})
					a, ok := ask()
					var r struct {
						Decision string `json:"decision"`
					}
					_ = json.Unmarshal(a.Result, &r)
					switch {
					case !ok || r.Decision == "cancel":
						status = "interrupted"
					case r.Decision == "accept" || r.Decision == "acceptForSession":
						note("item/completed", map[string]any{"item": map[string]any{"type": "commandExecution", "id": "call_1", "command": "touch avenor-conformance.txt", "status": "completed", "exitCode": 0}})
					default:
						note("item/completed", map[string]any{"item": map[string]any{"type": "commandExecution", "id": "call_1", "command": "touch avenor-conformance.txt", "status": "declined"}})
					}
				case strings.Contains(text, "Ask me"):
					// Codex's request_user_input: the answer becomes the
					// message text, as the model would repeat it.
					mu.Lock()
					id := json.RawMessage(fmt.Sprint(nextReq))
					nextReq++
					ch := make(chan msg, 1)
					answers[string(id)] = ch
					mu.Unlock()
					f.write(map[string]any{"id": id, "method": "item/tool/requestUserInput", "params": map[string]any{
						"threadId": thread, "turnId": turn, "itemId": "call_ask", "isBlocking": true,
						"questions": []any{map[string]any{"id": "colour", "header": "Colour", "question": "Which colour?",
							"options": []any{map[string]any{"label": "Blue", "description": "calm"}, map[string]any{"label": "Red", "description": "loud"}}}}}})
					select {
					case a := <-ch:
						msgText = string(a.Result)
					case <-stop:
						status = "interrupted"
					}
				case strings.Contains(text, "Count slowly"):
					status = "interrupted"
				loop:
					for i := 1; i <= 400; i++ {
						select {
						case <-stop:
							break loop
						case <-time.After(20 * time.Millisecond):
						}
						note("item/agentMessage/delta", map[string]any{"itemId": "msg_1", "delta": fmt.Sprintf("%d ", i)})
					}
					msgText = ""
				}
				if status == "completed" {
					note("item/agentMessage/delta", map[string]any{"itemId": "msg_2", "delta": msgText})
					note("item/completed", map[string]any{"item": map[string]any{"type": "agentMessage", "id": "msg_2", "text": msgText}})
					note("thread/tokenUsage/updated", map[string]any{"tokenUsage": map[string]any{"last": map[string]any{"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}})
					if fh, err := os.OpenFile(threadsFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
						fmt.Fprintln(fh, thread)
						fh.Close()
					}
				}
				note("turn/completed", map[string]any{"turn": map[string]any{"id": turn, "status": status, "items": []any{}}})
			}()
		default:
			if m.ID != nil {
				f.write(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "unknown method " + m.Method}})
			}
		}
	}
}
