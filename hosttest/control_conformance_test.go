package hosttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// conformanceCase is one call of the control method table and what every
// supervisor must answer: an error code and data, or a result holding
// these keys.
type conformanceCase struct {
	name, method string
	params       map[string]any
	code         int    // 0: a result
	data         string // the error's data, as JSON
	keys         []string
}

// controlConformance is the control method table's contract (docs/control-protocol.md#errors, docs/control-protocol.md#methods),
// the same for a one-shot run and for a stable runtime: one
// table serves both. The runtime is in a long turn; runtime_id is added
// to every call.
var controlConformance = []conformanceCase{
	{name: "status", method: "status", keys: []string{"session_id", "run_id", "pending_permission", "permission"}},
	{name: "result", method: "result", keys: []string{"final_output"}},
	{name: "history", method: "history", params: map[string]any{"limit": 1}, keys: []string{"events", "latest_seq", "runtime_id"}},
	{name: "history negative limit", method: "history", params: map[string]any{"limit": -1}, code: -32602, data: `{"detail":"limit must not be negative"}`},
	{name: "history negative after_seq", method: "history", params: map[string]any{"after_seq": -1}, code: -32602, data: `{"detail":"after_seq must not be negative"}`},
	{name: "history bad params", method: "history", params: map[string]any{"limit": "x"}, code: -32602},
	{name: "subscribe negative limit", method: "subscribe", params: map[string]any{"limit": -1}, code: -32602, data: `{"detail":"limit must not be negative"}`},
	{name: "subscribe negative after_seq", method: "subscribe", params: map[string]any{"after_seq": -1}, code: -32602, data: `{"detail":"after_seq must not be negative"}`},
	{name: "prompt without text", method: "prompt", code: -32602, data: `{"required":["text"]}`},
	{name: "prompt empty text", method: "prompt", params: map[string]any{"text": ""}, code: -32602, data: `{"detail":"text is empty"}`},
	{name: "prompt over the wire bound", method: "prompt", params: map[string]any{"text": strings.Repeat("x", 4<<20-64<<10+1)}, code: -32602},
	{name: "interrupt without text", method: "interrupt_and_prompt", code: -32602, data: `{"required":["text"]}`},
	{name: "answer without option", method: "answer_permission", params: map[string]any{"request_id": "perm_1"}, code: -32602, data: `{"required":["option_id"]}`},
	{name: "answer without request and option", method: "answer_permission", code: -32602, data: `{"required":["request_id","option_id"]}`},
	{name: "answer nothing pending", method: "answer_permission", params: map[string]any{"request_id": "perm_9", "option_id": "allow"}, code: -32001},
	{name: "unknown method", method: "no_such_method", code: -32601},
	{name: "prompt queued", method: "prompt", params: map[string]any{"text": "say queued"}, keys: []string{"accepted"}},
	{name: "cancel", method: "cancel", keys: []string{"ok"}},
}

// runConformance runs the table on c against the runtime id (every call
// carries runtime_id: id).
func runConformance(t *testing.T, c *client.Client, id string) {
	t.Helper()
	for _, tc := range controlConformance {
		params := map[string]any{"runtime_id": id}
		for k, v := range tc.params {
			params[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var res map[string]any
		err := c.Call(ctx, tc.method, params, &res)
		cancel()
		if tc.code != 0 {
			var re *client.RPCError
			if !errorsAs(err, &re) || re.Code != tc.code {
				t.Errorf("%s: got %v (%v), want error %d", tc.name, err, res, tc.code)
				continue
			}
			if tc.data != "" && !jsonEqual(re.Data, tc.data) {
				t.Errorf("%s: error data %s, want %s", tc.name, re.Data, tc.data)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, k := range tc.keys {
			if _, ok := res[k]; !ok {
				t.Errorf("%s: result %v has no %q", tc.name, res, k)
			}
		}
		if tc.method == "history" {
			if got, _ := res["runtime_id"].(string); got != id {
				t.Errorf("history echoes runtime_id %q, want %q", got, id)
			}
		}
	}
}

func errorsAs(err error, re **client.RPCError) bool {
	e, ok := err.(*client.RPCError)
	if ok {
		*re = e
	}
	return ok
}

func jsonEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestControlConformanceOneShotAndStable runs one conformance table against
// `avenor run --control-socket` and against a runtime of `avenor stable`.
func TestControlConformanceOneShotAndStable(t *testing.T) {
	const longTurn = "say started\nsleep 30s"
	t.Run("one-shot", func(t *testing.T) {
		w := newWorld(t)
		sock := filepath.Join(w.tmp, "c.sock")
		log := w.path("ev.ndjson")
		p := w.start(nil, "--backend", "scripted", "--prompt", longTurn, "--control-socket", sock, "--on-event", log, "--run-id", "conformrun000001")
		waitForLog(t, log, `"event":"agent.message_chunk"`, 10*time.Second)
		c, err := client.Dial(ctxT(t, 5*time.Second), sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		runConformance(t, c, "conformrun000001")
		if res := p.wait(); res.code != 130 {
			t.Errorf("the run after cancel: %v; want exit 130", res)
		}
	})
	t.Run("stable", func(t *testing.T) {
		w := newWorld(t)
		s := w.startStable("cf", nil)
		c := s.client()
		log := w.path("cf.ndjson")
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: longTurn, OnEvent: log})
		waitForLog(t, log, `"event":"agent.message_chunk"`, 10*time.Second)
		runConformance(t, c, sp.RuntimeID)
		rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		if rt.ExitCode == nil || *rt.ExitCode != 130 || !strings.Contains(rt.StopReason.String(), "cancel") {
			t.Errorf("the runtime after cancel: %s; want exit 130, cancelled", rt.Raw)
		}
	})
}
