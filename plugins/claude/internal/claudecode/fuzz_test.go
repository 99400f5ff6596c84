package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// maxResultText bounds a tool result's text in an event (toolResultEvent
// truncates at 64 KiB and adds "…").
const maxResultText = 64<<10 + len("…")

// FuzzTranscriptEvents maps any sequence of transcript lines (Claude Code's
// JSONL session file, as the PTY backend tails it) to events. Beyond not
// panicking: every event has a type and crosses the plugin wire; only a
// system/turn_duration record ends the turn; the text returned is exactly
// the message chunks' text; a tool result carries the kind of the tool_use
// that announced it ("other" when none did) and a bounded text.
func FuzzTranscriptEvents(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "transcript_2.1.332.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte(`"type":"assistant"`)) || bytes.Contains(l, []byte(`"tool_result"`)) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"` + strings.Repeat("é", 100) + `"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"a"},{"type":"image"}]}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"u","content":7}]}}` + "\n" +
		`{"type":"assistant","message":null}` + "\n" + `{"type":"system","subtype":"turn_duration"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kinds := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			announced := map[string]string{}
			for k, v := range kinds {
				announced[k] = v
			}
			evs, end, text := transcriptEvents("ses", line, kinds)
			var r transcriptRecord
			_ = json.Unmarshal(line, &r)
			if end && (r.Type != "system" || r.Subtype != "turn_duration") {
				t.Fatalf("a %s/%s record ended the turn", r.Type, r.Subtype)
			}
			var chunks strings.Builder
			for _, ev := range evs {
				checkEvent(t, ev)
				switch ev.Type {
				case runtime.EventMessageChunk:
					chunks.WriteString(chunkText(ev))
				case runtime.EventToolCallUpdate:
					id, _ := ev.Fields["toolCallId"].(string)
					want := announced[id]
					if want == "" {
						want = "other"
					}
					if ev.Fields["kind"] != want {
						t.Fatalf("result of %q has kind %v, its tool_use said %q", id, ev.Fields["kind"], want)
					}
					out, _ := ev.Fields["rawOutput"].(map[string]any)
					if s, _ := out["output"].(string); len(s) > maxResultText {
						t.Fatalf("a tool result of %d bytes", len(s))
					}
				}
			}
			if chunks.String() != text {
				t.Fatalf("returned text %q, chunks say %q", text, chunks.String())
			}
		}
	})
}

// FuzzStreamFrames feeds any sequence of stream-json stdout lines to a
// claude -p session with a turn in flight; its "claude" is `cat`, so what
// the plugin answers comes back on its stdout. Beyond not panicking: every
// event has a type and crosses the plugin wire; an unknown message type is
// counted once and passed on as one avenor.native; every control_request
// gets exactly one control_response with its request_id (success for
// can_use_tool, error for anything else); a result reaches the turn.
func FuzzStreamFrames(f *testing.F) {
	f.Add([]byte(`{"type":"system","subtype":"init","session_id":"other"}` + "\n" +
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}}}` + "\n" +
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}}` + "\n" +
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"tu","name":"Bash","input":{"command":"ls"}}]}}` + "\n" +
		`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"},"tool_use_id":"tu","permission_suggestions":[{"type":"addRules"}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"tu","content":"out"}]}}` + "\n" +
		`{"type":"result","subtype":"success","result":"hi","stop_reason":"end_turn","usage":{"input_tokens":1}}`))
	f.Add([]byte(`{"type":"control_request","request_id":"r2","request":{"subtype":"hook_callback"}}` + "\n" +
		`{"type":"brand_new","x":1}` + "\n" + `not json` + "\n" + `{"type":"control_response","response":{"request_id":"nobody"}}` + "\n" +
		`{"type":"stream_event","event":{"type":"content_block_delta"}}` + "\n" + `{"type":"result"}` + "\n" + `{"type":"result"}`))
	proc, err := agentproc.Start(context.Background(), agentproc.Spec{Path: "cat", Logger: hclog.NewNullLogger()})
	if err != nil {
		f.Skipf("cat is needed as the fake claude: %v", err)
	}
	f.Cleanup(func() { _ = proc.Stop(time.Second) })
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &fuzzHost{}
		s := &streamSession{cfg: streamConfig{Backend: "claude", Binary: "claude", SessionID: "ses"}, host: h, log: hclog.NewNullLogger(),
			proc: proc, gone: make(chan struct{}), pending: map[string]chan controlResponse{}, streamed: map[string]bool{}, tools: map[string]string{},
			gate: turn.NewGate(h, maxHeld, "claude")}
		s.Runner = turn.New(turn.Config{Backend: "claude", Gate: s.gate})
		rt, err := s.Runner.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Runner.End(rt)
		st := &streamTurn{rt: rt, result: make(chan resultFrame, 1)}
		s.turn = st
		results := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			unknownBefore, evBefore := st.unknown.Load(), h.len()
			s.handle(line)
			var fr frame
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &fr) != nil {
				if h.len() != evBefore {
					t.Fatalf("non-JSON output gave events")
				}
				continue
			}
			grew := st.unknown.Load() - unknownBefore
			if unknown := !knownTypes[fr.Type]; (grew == 1) != unknown || grew > 1 ||
				unknown && (h.len() != evBefore+1 || h.at(evBefore).Type != runtime.EventNative) {
				t.Fatalf("type %q (known %v): %d more unknown frames, events %v", fr.Type, knownTypes[fr.Type], grew, h.types(evBefore))
			}
			switch fr.Type {
			case "control_request":
				var req canUseTool
				_ = json.Unmarshal(fr.Request, &req)
				want := "error"
				if req.Subtype == "can_use_tool" {
					want = "success"
				}
				checkControlResponse(t, proc, fr.RequestID, want)
			case "result":
				results++
			}
		}
		if results > 0 && len(st.result) != 1 {
			t.Fatalf("%d results, none reached the turn", results)
		}
		for _, ev := range h.all() {
			checkEvent(t, ev)
		}
	})
}

// checkControlResponse waits for the plugin's answer to request id.
func checkControlResponse(t *testing.T, proc *agentproc.Process, id, subtype string) {
	t.Helper()
	select {
	case l := <-proc.Lines():
		var resp struct {
			Type     string `json:"type"`
			Response struct {
				Subtype   string `json:"subtype"`
				RequestID string `json:"request_id"`
			} `json:"response"`
		}
		if err := json.Unmarshal(l.Data, &resp); err != nil || l.Err != nil {
			t.Fatalf("the plugin wrote %q (%v)", l.Data, l.Err)
		}
		if resp.Type != "control_response" || resp.Response.RequestID != id || resp.Response.Subtype != subtype {
			t.Fatalf("answer %s, want a %s control_response to %q", l.Data, subtype, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("control_request %q was not answered", id)
	}
}

func checkEvent(t *testing.T, ev runtime.Event) {
	t.Helper()
	if ev.Type == "" {
		t.Fatalf("an event without a type: %v", ev)
	}
	if _, err := json.Marshal(ev.Fields); err != nil {
		t.Fatalf("event %s does not cross the plugin wire: %v", ev.Type, err)
	}
}

func chunkText(ev runtime.Event) string {
	c, _ := ev.Fields["content"].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

// fuzzHost records events and allows every permission request at once.
type fuzzHost struct {
	mu     sync.Mutex
	events []runtime.Event
}

func (h *fuzzHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *fuzzHost) AskPermission(context.Context, runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: "allow", Kind: runtime.KindAllowOnce}, nil
}

func (h *fuzzHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *fuzzHost) len() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.events) }

func (h *fuzzHost) at(i int) runtime.Event { h.mu.Lock(); defer h.mu.Unlock(); return h.events[i] }

func (h *fuzzHost) all() []runtime.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.Event(nil), h.events...)
}

func (h *fuzzHost) types(from int) []runtime.EventType {
	var out []runtime.EventType
	for _, ev := range h.all()[from:] {
		out = append(out, ev.Type)
	}
	return out
}
