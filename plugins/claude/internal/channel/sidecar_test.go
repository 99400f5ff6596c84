package channel

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// mcpClient drives a sidecar over in-memory pipes, as Claude Code would.
type mcpClient struct {
	t     *testing.T
	w     *io.PipeWriter
	lines chan rpcMessage
}

func startSidecar(t *testing.T, b *Broker, runID, token string) (*mcpClient, chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- RunSidecar(context.Background(), SidecarConfig{RunID: runID, Token: token, BrokerURL: b.URL() + "/",
			In: inR, Out: outW, HeartbeatEvery: 20 * time.Millisecond, Version: "test"})
		outW.Close()
	}()
	c := &mcpClient{t: t, w: inW, lines: make(chan rpcMessage, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "[") {
				var batch []rpcMessage
				if err := json.Unmarshal([]byte(line), &batch); err != nil {
					t.Errorf("bad batch from sidecar: %s", line)
				}
				for _, m := range batch {
					c.lines <- m
				}
				continue
			}
			var m rpcMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("bad line from sidecar: %s", line)
			}
			c.lines <- m
		}
		close(c.lines)
	}()
	return c, done
}

func (c *mcpClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, s+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *mcpClient) next() rpcMessage {
	c.t.Helper()
	select {
	case m := <-c.lines:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the sidecar")
	}
	return rpcMessage{}
}

func nextEvent(t *testing.T, b *Broker) Event {
	t.Helper()
	select {
	case ev := <-b.Events():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no broker event")
	}
	return Event{}
}

// waitHeartbeats waits for n heartbeats of runID after its registration.
func waitHeartbeats(t *testing.T, b *Broker, runID string, n int) {
	t.Helper()
	lastBeat := func() time.Time {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.runs[runID].lastBeat
	}
	last := lastBeat()
	deadline := time.Now().Add(10 * time.Second)
	for seen := 0; seen < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d heartbeats of %s in 10 s, want %d", seen, runID, n)
		}
		time.Sleep(5 * time.Millisecond)
		if cur := lastBeat(); cur.After(last) {
			last = cur
			seen++
		}
	}
}

func TestSidecar(t *testing.T) {
	b := newTestBroker(t, Config{})
	tok := b.AddRun("run-1")
	c, done := startSidecar(t, b, "run-1", tok)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}`)
	m := c.next()
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
		Capabilities map[string]map[string]any `json:"capabilities"`
	}
	if err := json.Unmarshal(m.Result, &init); err != nil || string(m.ID) != "1" {
		t.Fatalf("initialize answer %+v: %v", m, err)
	}
	if init.ProtocolVersion != "2024-11-05" || init.ServerInfo.Name != "avenor" || init.Capabilities["tools"] == nil ||
		init.Capabilities["experimental"]["claude/channel"] == nil || init.Capabilities["experimental"]["claude/channel/permission"] == nil {
		t.Fatalf("initialize result %s", m.Result)
	}
	// Nothing registers before initialized.
	select {
	case ev := <-b.Events():
		t.Fatalf("event before initialized: %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
	// Registration comes with tools/list: only then does Claude Code offer
	// the tools to the model.
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`)
	m = c.next()
	var tl struct {
		Tools []toolDef `json:"tools"`
	}
	_ = json.Unmarshal(m.Result, &tl)
	var names []string
	for _, td := range tl.Tools {
		names = append(names, td.Name)
	}
	if string(m.ID) != `"two"` || strings.Join(names, ",") != "avenor_report,avenor_finish,avenor_reply,avenor_send,avenor_upsend" {
		t.Fatalf("tools/list: %s", m.Result)
	}
	if ev := nextEvent(t, b); ev.Kind != EventRegistered || ev.RunID != "run-1" {
		t.Fatalf("event %+v", ev)
	}
	// Heartbeats follow, every HeartbeatEvery, for as long as it runs.
	waitHeartbeats(t, b, "run-1", 3)

	// Tool calls reach the broker, token stripped.
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"avenor_finish","arguments":{"status":"done","summary":"ok","files_changed":["a.go"]}}}`)
	ev := nextEvent(t, b)
	if ev.Kind != EventFinish || ev.Finish.Summary != "ok" || ev.Finish.FilesChanged[0] != "a.go" || ev.Finish.Token != "" {
		t.Fatalf("finish event %+v", ev)
	}
	if m := c.next(); string(m.ID) != "3" || !strings.Contains(string(m.Result), `"isError":false`) {
		t.Fatalf("tools/call answer %+v", m)
	}
	// Bad arguments are a tool error the model can read, not a broker call.
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"avenor_report","arguments":{"state":"dancing"}}}`)
	if m := c.next(); !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "state must be one of") {
		t.Fatalf("bad arguments answer %s", m.Result)
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"avenor_send","arguments":{"to_run_id":"elsewhere","message":"hi"}}}`)
	if m := c.next(); !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "not connected to this broker") {
		t.Fatalf("send answer %s", m.Result)
	}
	c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}`)
	if m := c.next(); m.Error == nil || m.Error.Code != codeInvalidParams {
		t.Fatalf("unknown tool answer %+v", m)
	}

	// Control messages become channel notifications.
	ctrl, err := b.Push("run-1", ControlContinue, map[string]string{"message": "do the thing"}, "")
	if err != nil {
		t.Fatal(err)
	}
	m = c.next()
	var note struct {
		Content string            `json:"content"`
		Meta    map[string]string `json:"meta"`
	}
	_ = json.Unmarshal(m.Params, &note)
	if m.Method != MethodChannel || note.Content != "do the thing" || note.Meta["run_id"] != "run-1" || note.Meta["ctrl_id"] != ctrl.ID || note.Meta["type"] != "continue" {
		t.Fatalf("channel notification %+v %s", m, m.Params)
	}
	if _, ok := note.Meta["from_run_id"]; ok {
		t.Errorf("empty from_run_id sent: %v", note.Meta)
	}

	// Permission relay: Claude's request reaches the broker, the decision
	// comes back in Claude's schema.
	c.send(`{"jsonrpc":"2.0","method":"notifications/claude/channel/permission_request","params":{"request_id":"abcde","tool_name":"Bash","description":"run ls","input_preview":"ls"}}`)
	if ev := nextEvent(t, b); ev.Kind != EventPermission || ev.Permission.ToolName != "Bash" || ev.Permission.InputPreview != "ls" {
		t.Fatalf("permission event %+v", ev)
	}
	if _, err := b.Decide("run-1", "abcde", false); err != nil {
		t.Fatal(err)
	}
	if m := c.next(); m.Method != MethodPermission || string(m.Params) != `{"behavior":"deny","request_id":"abcde"}` {
		t.Fatalf("permission notification %+v %s", m, m.Params)
	}

	// Protocol errors.
	for _, tc := range []struct {
		in   string
		code int
	}{
		{`{not json`, codeParseError},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":9,"method":"resources/list"}`, codeMethodNotFound},
	} {
		c.send(tc.in)
		if m := c.next(); m.Error == nil || m.Error.Code != tc.code {
			t.Errorf("%s: answer %+v, want code %d", tc.in, m, tc.code)
		}
	}
	// A batch is answered as one array; notifications in it get no answer.
	c.send(`[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled"},{"jsonrpc":"2.0","id":11,"method":"ping"}]`)
	if a, b := c.next(), c.next(); string(a.ID) != "10" || string(b.ID) != "11" {
		t.Fatalf("batch answers %+v %+v", a, b)
	}

	// Claude closing stdin ends the sidecar and all its goroutines.
	c.w.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sidecar did not stop at EOF")
	}
}

// A client that never lists tools is registered toolsListWait after
// initialized.
func TestSidecarRegistersWithoutToolsList(t *testing.T) {
	b := newTestBroker(t, Config{})
	tok := b.AddRun("r")
	c, done := startSidecar(t, b, "r", tok)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	c.next()
	start := time.Now()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if ev := nextEvent(t, b); ev.Kind != EventRegistered {
		t.Fatalf("event %+v", ev)
	}
	if el := time.Since(start); el < toolsListWait || el > toolsListWait+2*time.Second {
		t.Errorf("registered after %v, want about %v", el, toolsListWait)
	}
	c.w.Close()
	<-done
}

func TestSidecarFlags(t *testing.T) {
	err := RunSidecar(context.Background(), SidecarConfig{RunID: "r", BrokerURL: "http://x"})
	if err == nil || err.Error() != "--run-id, --token, and --broker-url are required" {
		t.Fatalf("err = %v", err)
	}
}

func TestReadLine(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 100) + "\nlast"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	for _, want := range []struct {
		line string
		err  error
	}{{"short", nil}, {"", errFrameTooLong}, {"last", io.EOF}} {
		line, err := readLine(br, 50)
		if string(line) != want.line || err != want.err {
			t.Fatalf("readLine = %q, %v; want %q, %v", line, err, want.line, want.err)
		}
	}
}

func FuzzParseFrame(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"initialize"}`, `[{"jsonrpc":"2.0","method":"x"}]`, `[]`, `{`, `null`, `{"jsonrpc":"2.0","id":null}`, `  `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msgs, _, err := parseFrame(line)
		if err != nil {
			if msgs != nil {
				t.Fatal("messages with an error")
			}
			return
		}
		for _, m := range msgs {
			if m.JSONRPC != "2.0" || (m.Method == "" && len(m.ID) == 0) {
				t.Fatalf("accepted %+v from %q", m, line)
			}
		}
	})
}
