package appserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// FuzzFrames feeds a sequence of app-server frames (one JSON message a line,
// as Codex writes them) to a session with a turn in flight, the way the acp
// connection dispatches them: notifications to HandleNotification, requests
// to HandleRequest, with a host that picks the first offered option.
// Beyond not panicking: every event has a type and crosses the plugin wire
// (encoding/json); an unmapped frame is counted exactly once per
// avenor.native; turn/completed ends the turn with a contract stop reason;
// an approval answer is a decision Codex offered (or cancel) and crosses the wire.
func FuzzFrames(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.transcript"))
	for _, p := range paths {
		f.Add(serverLines(f, p))
	}
	f.Add([]byte(`{"method":"turn/completed","params":{"turn":{"id":"x","status":"failed","error":{"message":"m","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":null}}}}}}` + "\n" +
		`{"method":"item/agentMessage/delta","params":{"delta":"after the turn"}}`))
	f.Add([]byte(`{"method":"item/commandExecution/requestApproval","id":5,"params":{"availableDecisions":[{"a":1,"b":2},7,"cancel",{"acceptForSession":{}}]}}` + "\n" +
		`{"method":"item/started","params":{"item":"not an object"}}` + "\n" + `{"method":"turn/plan/updated","params":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &fuzzHost{}
		s := &Session{host: h, log: hclog.NewNullLogger(), id: "thr", gate: turn.NewGate(h, maxBuffered, Name)}
		s.Runner = turn.New(turn.Config{Backend: Name, Gate: s.gate})
		rt, err := s.Runner.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Runner.End(rt)
		ts := &turnState{rt: rt, done: make(chan struct{})}
		s.turn = ts
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Method == "" {
				continue
			}
			unknownBefore, nativeBefore := s.UnknownFrames(), natives(h.events)
			if len(msg.ID) > 0 {
				res, rpcErr := s.HandleRequest(context.Background(), msg.Method, msg.Params)
				checkAnswer(t, msg.Method, msg.Params, res, rpcErr)
			} else {
				s.HandleNotification(msg.Method, msg.Params)
			}
			// Events held after the turn ended are sent now, so each
			// frame's events are counted (the gate's bound is sdk/turn's).
			s.gate.Flush()
			if grew := s.UnknownFrames() - unknownBefore; grew > 1 || (grew == 1) != (natives(h.events) > nativeBefore) {
				t.Fatalf("%s: %d more unknown frames, avenor.native events %d -> %d", msg.Method, grew, nativeBefore, natives(h.events))
			}
		}
		for _, ev := range h.events {
			if ev.Type == "" {
				t.Fatalf("an event without a type: %v", ev)
			}
			if _, err := json.Marshal(ev.Fields); err != nil {
				t.Fatalf("event %s does not cross the plugin wire: %v", ev.Type, err)
			}
		}
		if isDone(ts.done) {
			switch ts.result.StopReason {
			case runtime.StopEndTurn, runtime.StopCancelled, runtime.StopMaxTokens, runtime.StopRefusal, runtime.StopError:
			default:
				t.Fatalf("turn ended with stop reason %q", ts.result.StopReason)
			}
			if _, err := json.Marshal(ts.result.Extra); err != nil {
				t.Fatalf("turn result extra does not cross the wire: %v", err)
			}
		}
	})
}

// checkAnswer: an approval is answered with a decision Codex offered (or
// cancel, which it always takes) and every answer crosses the wire.
func checkAnswer(t *testing.T, method string, params json.RawMessage, res any, rpcErr any) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("%s: the answer does not cross the wire: %v", method, err)
	}
	if method != methodCommandApproval && method != methodFileChangeApproval || res == nil {
		return
	}
	var p approvalParams
	_ = json.Unmarshal(params, &p)
	var got struct {
		Decision json.RawMessage `json:"decision"`
	}
	_ = json.Unmarshal(b, &got)
	if string(got.Decision) == `"cancel"` {
		return
	}
	for _, o := range decisionOptions(method, p.AvailableDecisions) {
		if canon(o.decision) == canon(got.Decision) {
			return
		}
	}
	t.Fatalf("%s answered %s, not among the offered decisions %s", method, got.Decision, p.AvailableDecisions)
}

func canon(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fuzzHost records events and picks the first offered option at once.
type fuzzHost struct{ events []runtime.Event }

func (h *fuzzHost) Emit(ev runtime.Event) { h.events = append(h.events, ev) }

func (h *fuzzHost) AskPermission(_ context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	if len(req.Options) == 0 {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, nil
	}
	o := req.Options[0]
	return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: runtime.DecisionKind(o.Kind)}, nil
}

func (h *fuzzHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

// natives counts the avenor.native events sent and held.
func natives(lists ...[]runtime.Event) int {
	n := 0
	for _, l := range lists {
		for _, ev := range l {
			if ev.Type == runtime.EventNative {
				n++
			}
		}
	}
	return n
}

// serverLines is what Codex wrote in a recorded transcript ("<- " lines).
func serverLines(f *testing.F, path string) []byte {
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
