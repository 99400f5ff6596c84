package control

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/host/event"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGoldenOneShot replays testdata/oneshot.golden against a one-shot
// server: each "> " line is sent, the "< " lines that follow are the exact
// lines expected back (none for a notification). Lines starting with # are
// comments. -update rewrites the expectations from what the server says.
func TestGoldenOneShot(t *testing.T) {
	const path = "testdata/oneshot.golden"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rt := newFakeRuntime()
	rt.write(t, event.Event{"event": "session.start", "backend": "scripted", "session_id": "ses_1"})
	rt.write(t, event.Event{"event": "agent.message_chunk", "content": map[string]any{"type": "text", "text": "a <b> & c"}})
	rt.write(t, event.Event{"event": "session.end", "stop_reason": "end_turn", "final_output": "a <b> & c"})
	s := startRun(t, rt, runOptions{RunID: "run1"}, Config{IdentityToken: "tok-123"})
	c := dialRaw(t, s.Path())

	var out strings.Builder
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "> ") {
			if !strings.HasPrefix(l, "< ") {
				out.WriteString(l + "\n")
			}
			continue
		}
		out.WriteString(l + "\n")
		c.send(strings.TrimPrefix(l, "> "))
		var want []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "< ") {
			i++
			want = append(want, strings.TrimPrefix(lines[i], "< "))
		}
		n := len(want)
		if *update {
			n = expectedCount(c, len(want))
		}
		for j := 0; j < n; j++ {
			got := c.recv()
			out.WriteString("< " + got + "\n")
			if !*update && got != want[j] {
				t.Errorf("line %d: %s\n got: %s\nwant: %s", i+1, l, got, want[j])
			}
		}
	}
	// Nothing more may be pending: the next line answers this request.
	if got := c.call(`{"jsonrpc":"2.0","id":"end","method":"identity"}`); got != `{"jsonrpc":"2.0","id":"end","result":{"token":"tok-123"}}` {
		t.Errorf("an unexpected line was pending: %s", got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.cancels != 1 || strings.Join(rt.prompts, "|") != "next step" || strings.Join(rt.interrupts, "|") != "stop that|and keep" {
		t.Errorf("runtime saw cancels=%d prompts=%q interrupts=%q", rt.cancels, rt.prompts, rt.interrupts)
	}
	if len(rt.keepQueue) != 2 || rt.keepQueue[0] || !rt.keepQueue[1] {
		t.Errorf("keep_queue = %v", rt.keepQueue)
	}
}

// expectedCount, for -update, reads how many lines answer a request: it
// probes with an identity call and counts the lines before its answer,
// keeping them for recv.
func expectedCount(c *rawConn, _ int) int {
	c.send(`{"jsonrpc":"2.0","id":"probe","method":"identity"}`)
	var pending []string
	for {
		l := c.recv()
		if strings.Contains(l, `"id":"probe"`) {
			break
		}
		pending = append(pending, l)
	}
	c.queued = append(c.queued, pending...)
	return len(pending)
}
