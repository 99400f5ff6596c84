package liveview

import (
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/event"
)

// The live view shows a runtime's question — its prompts with their
// options, how to answer it — and what became of it.
func TestViewShowsQuestions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		ev   event.Event
		want []string
	}{
		{"control", Options{ControlSocket: "/tmp/c.sock"}, event.Event{"resolver": "control"}, []string{
			"? question q1\n", "  Which colours? [red + blue]\n", "  Why?\n",
			"  answer: avenor control --socket /tmp/c.sock answer-question q1 '<answers JSON array>'\n",
			"  ✓ answered by control\n",
		}},
		{"file", Options{PermBase: "/tmp/run.perm"}, event.Event{"resolver": "file"}, []string{
			"  answer: avenor answer --question q1 --answer <value> /tmp/run.perm\n",
		}},
		{"nobody", Options{}, event.Event{"resolver": "none", "timeout_ms": int64(600000)}, []string{
			"  nothing is set up to answer it: in 10m0s the agent goes on without an answer\n",
			"  ✗ no answer (timeout): the agent goes on\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
			defer w.Close()
			var out syncBuffer
			tc.opts.Out, tc.opts.Mode = &out, Plain
			v := Start(w, tc.opts)
			q := event.Event{"event": "question.request", "request_id": "q1", "prompts": []any{
				map[string]any{"question": "Which colours?", "options": []any{"red", "blue"}, "multi": true},
				map[string]any{"question": "Why?"},
			}}
			for k, val := range tc.ev {
				q[k] = val
			}
			resp := event.Event{"event": "question.response", "request_id": "q1", "answered": true, "source": "control"}
			if tc.name == "nobody" {
				resp = event.Event{"event": "question.response", "request_id": "q1", "answered": false, "reason": "timeout", "source": "avenor"}
			}
			for _, ev := range []event.Event{q, resp} {
				if _, err := w.Write(ev); err != nil {
					t.Fatal(err)
				}
			}
			v.Finish(Summary{StopReason: "end_turn"})
			got := out.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("view lacks %q:\n%s", want, got)
				}
			}
		})
	}
}
