package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// FuzzFrameMapping feeds a sequence of agent frames (one JSON-RPC message a
// line, as an ACP agent writes them) through the stateful translation to
// events: session/update through the mapper, session/request_permission
// through the tool-call announcement, the host's request and the answer.
// Beyond not panicking: every event has a type, crosses the plugin wire
// (encoding/json), a mapped update yields exactly its canonical event (and a
// synthetic tool.call only for a tool call never seen), an unknown kind one
// avenor.native, a malformed one nothing; the tool memory stays bounded; an
// answer picks one of the offered options or cancels.
func FuzzFrameMapping(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range paths {
		f.Add(agentLines(f, p))
	}
	f.Add([]byte(`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}}` + "\n" +
		`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"failed"}}}`))
	f.Add([]byte(`{"method":"session/update","params":{"update":null}}` + "\n" + `{"method":"session/update","params":[]}` + "\n" +
		`{"method":"session/update","params":{"update":{"sessionUpdate":7,"toolCallId":{}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMapper()
		announced := map[string]bool{} // ids the events announced so far
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan() && n < maxTrackedTools; n++ {
			var msg struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) != nil {
				continue
			}
			switch msg.Method {
			case "session/update":
				checkUpdate(t, m, msg.Params, announced)
			case "session/request_permission":
				checkPermission(t, m, msg.Params, announced)
			}
			if len(m.tools) > maxTrackedTools {
				t.Fatalf("the mapper remembers %d tool calls, over %d", len(m.tools), maxTrackedTools)
			}
		}
	})
}

func checkUpdate(t *testing.T, m *mapper, params json.RawMessage, announced map[string]bool) {
	t.Helper()
	evs, known, err := m.mapUpdate(params)
	checkEvents(t, evs)
	if err != nil {
		if len(evs) != 0 {
			t.Fatalf("a malformed update gave events: %v (%v)", evs, err)
		}
		return
	}
	var p updateParams
	_ = json.Unmarshal(params, &p)
	var upd map[string]any
	_ = json.Unmarshal(p.Update, &upd)
	kind, _ := upd["sessionUpdate"].(string)
	id, _ := upd["toolCallId"].(string)
	last := evs[len(evs)-1]
	switch {
	case !known:
		if len(evs) != 1 || last.Type != runtime.EventNative || last.Fields["native_type"] != kind {
			t.Fatalf("unknown kind %q: %v", kind, evs)
		}
		return
	case last.Type != canonical[kind] || last.Fields["session_update"] != kind || len(evs) > 2:
		t.Fatalf("kind %q mapped to %v", kind, evs)
	case len(evs) == 2:
		if kind != "tool_call_update" || evs[0].Type != runtime.EventToolCall || evs[0].Fields["synthetic"] != true || id == "" || announced[id] {
			t.Fatalf("a synthetic tool.call where none belongs (kind %q, id %q, seen %v): %v", kind, id, announced[id], evs)
		}
	case kind == "tool_call_update" && id != "" && !announced[id]:
		t.Fatalf("the first update of tool call %q was not announced: %v", id, evs)
	}
	if id != "" && (kind == "tool_call" || kind == "tool_call_update") {
		announced[id] = true
	}
}

func checkPermission(t *testing.T, m *mapper, params json.RawMessage, announced map[string]bool) {
	t.Helper()
	var p permissionParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var id string
	if p.ToolCall != nil {
		id, _ = p.ToolCall["toolCallId"].(string)
		ev, ok := m.announce(id, p.SessionID, p.ToolCall)
		if ok {
			checkEvents(t, []runtime.Event{ev})
		}
		if ok != (id != "" && !announced[id]) {
			t.Fatalf("tool call %q (seen %v) announced %v", id, announced[id], ok)
		}
		if id != "" {
			announced[id] = true
		}
	}
	req := permissionRequest(json.RawMessage(`7`), p, m.tool(id))
	if req.ID != "7" || len(req.Options) != len(p.Options) {
		t.Fatalf("request %+v from %+v", req, p)
	}
	if _, err := json.Marshal(req.Fields); err != nil {
		t.Fatalf("request fields do not cross the wire: %v", err)
	}
	for _, kind := range []string{runtime.KindAllowOnce, runtime.KindAllowAlways, runtime.KindReject, ""} {
		out := permissionAnswer(p.Options, runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, Kind: kind}, nil)
		switch out.Outcome.Outcome {
		case runtime.OutcomeCancelled:
		case runtime.OutcomeSelected:
			if !offered(p.Options, out.Outcome.OptionID, kind) {
				t.Fatalf("answer %q for kind %q is not an offered option of that kind: %+v", out.Outcome.OptionID, kind, p.Options)
			}
		default:
			t.Fatalf("answer outcome %q", out.Outcome.Outcome)
		}
	}
}

func offered(offers []PermissionOffer, id, kind string) bool {
	for _, o := range offers {
		if o.OptionID == id && runtime.DecisionKind(o.Kind) == kind {
			return true
		}
	}
	return false
}

func checkEvents(t *testing.T, evs []runtime.Event) {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == "" {
			t.Fatalf("an event without a type: %v", ev)
		}
		if _, err := json.Marshal(ev.Fields); err != nil {
			t.Fatalf("event %s does not cross the plugin wire: %v", ev.Type, err)
		}
	}
}

// agentLines is what the agent wrote in a recorded transcript ("<- " lines).
func agentLines(f *testing.F, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, "<- "); ok {
			out = append(out, rest)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
