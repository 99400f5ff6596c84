//go:build reliability

package hosttest

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestBadRuntimeOutputRecovers extends TestBadRuntimeOutput: after the bad
// output the runtime goes on, and what it says next still arrives; bad
// output on stderr or a line that never ends is bounded by the run's own
// limits. Each case: no hang (badInputGuard), a sentinel with the expected
// status, session.end last, a gap-free seq and a bounded event log.
func TestBadRuntimeOutputRecovers(t *testing.T) {
	cases := []struct {
		name, script string
		extra        []string
		// status is the sentinel's first line; after, a message chunk text
		// that must arrive after the bad output ("" for none); warn, a
		// substring of an avenor.warning that must be there.
		status, after, warn string
	}{
		{name: "100 MB line, then a normal one",
			script: `lines head -c 104857600 /dev/zero | tr '\000' x; echo; echo after-the-long-line`,
			status: "DONE", after: "after-the-long-line", warn: "line"},
		{name: "binary garbage, then a normal line",
			script: `lines head -c 2000000 /dev/urandom; echo; echo after-the-garbage`,
			status: "DONE", after: "after-the-garbage"},
		{name: "100 MB on stderr",
			script: `lines head -c 104857600 /dev/zero | tr '\000' x >&2; echo after-stderr`,
			status: "DONE", after: "after-stderr"},
		{name: "a line that never ends, under --timeout",
			script: `lines head -c 10485760 /dev/zero | tr '\000' x; sleep 60`, extra: []string{"--timeout", "3s"},
			status: "TIMEOUT"},
		{name: "a line that never ends, under --progress-timeout",
			script: `lines head -c 10485760 /dev/zero | tr '\000' x; sleep 60`, extra: []string{"--progress-timeout", "3s"},
			status: "TIMEOUT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath, sent := w.path("events.ndjson"), w.path("run.done")
			args := append([]string{"--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--sentinel-file", sent,
				"--prompt", tc.script}, tc.extra...)
			res := w.run(args...)
			if res.elapsed > badInputGuard {
				t.Errorf("took %v", res.elapsed)
			}
			b, err := os.ReadFile(sent)
			if err != nil || !strings.HasPrefix(string(b), tc.status+"\n") {
				t.Fatalf("sentinel %q (%v), want %s; %v", b, err, tc.status, res)
			}
			evs := readEvents(t, evPath)
			checkSeq(t, evs)
			lastSessionEnd(t, evs)
			if st, _ := os.Stat(evPath); st.Size() > 64<<20 {
				t.Errorf("the event log holds %d bytes: a runtime line is not bounded", st.Size())
			}
			if tc.after != "" && !chunkSays(evs, tc.after) {
				t.Errorf("no message chunk %q after the bad output: %v", tc.after, names(evs))
			}
			if tc.warn != "" {
				found := false
				for _, ev := range only(evs, "avenor.warning") {
					found = found || strings.Contains(ev.str("message"), tc.warn)
				}
				if !found {
					t.Errorf("no avenor.warning mentioning %q: %v", tc.warn, only(evs, "avenor.warning"))
				}
			}
			t.Logf("%v; %d events, exit %d", res.elapsed.Round(time.Millisecond), len(evs), res.code)
		})
	}
}

// chunkSays: some agent.message_chunk's text holds s.
func chunkSays(evs []event, s string) bool {
	for _, ev := range only(evs, "agent.message_chunk") {
		if c, ok := ev["content"].(map[string]any); ok {
			if text, _ := c["text"].(string); strings.Contains(text, s) {
				return true
			}
		}
	}
	return false
}
