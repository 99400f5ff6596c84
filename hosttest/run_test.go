package hosttest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
)

var semver = regexp.MustCompile(`^v?\d+\.\d+\.\d+`)

// TestEndTurn: a clean turn gives the whole event stream in order, the DONE
// sentinel byte for byte and exit 0, through both test plugins.
func TestEndTurn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, backend, prompt string
		sessionPrefix         string
		names                 []string
		final                 string
		usage                 map[string]any
	}{
		{
			name: "scripted", backend: "scripted", sessionPrefix: "scr_",
			prompt: "say hi\nchunks 2\nusage in=3 out=4",
			names: []string{"session.start", "avenor.turn.start", "agent.message_chunk", "agent.message_chunk",
				"agent.message_chunk", "agent.status", "session.end"},
			final: "hichunk 1\nchunk 2\n",
			usage: map[string]any{"input_tokens": 3.0, "output_tokens": 4.0, "total_tokens": 7.0, "cached_read_tokens": 0.0},
		},
		{
			// <, > and & come out HTML-escaped in the log (docs/events.md#the-envelope); readEvents checks the bytes.
			name: "echo", backend: "echo", sessionPrefix: "echo_",
			prompt: "<hi> & bye",
			names: []string{"session.start", "avenor.turn.start", "agent.status", "agent.thought_chunk", "agent.thought_chunk",
				"agent.status", "tool.call", "tool.call_update", "agent.message_chunk", "agent.message_chunk",
				"agent.message_chunk", "agent.message_chunk", "agent.message_chunk", "agent.message_chunk",
				"agent.status", "session.end"},
			final: "echo (turn 1): <hi> & bye",
			usage: map[string]any{"input_tokens": 10.0, "output_tokens": 25.0, "total_tokens": 35.0, "cached_read_tokens": 0.0},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			dir := w.path("project")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
			const runID = "a1b2c3d4e5f60718"
			from := time.Now()
			res := w.run("--backend", tc.backend, "--dir", dir, "--prompt", tc.prompt,
				"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", runID)
			if res.code != 0 || res.stdout != "" || res.stderr != "" {
				t.Fatalf("want exit 0 and no output; got %v", res)
			}
			evs := readEvents(t, evPath)
			checkEnvelope(t, evs, runID, from, time.Now())
			if got := names(evs); !slices.Equal(got, tc.names) {
				t.Errorf("events:\n got %v\nwant %v", got, tc.names)
			}

			start := evs[0]
			id := start.str("session_id")
			if !strings.HasPrefix(id, tc.sessionPrefix) {
				t.Errorf("session.start session_id = %q, want prefix %q", id, tc.sessionPrefix)
			}
			for k, want := range map[string]any{
				"event": "session.start", "backend": tc.backend, "dir": dir, "plugin": tc.backend,
				"protocol_version": float64(plugin.ProtocolVersion),
			} {
				if start[k] != want {
					t.Errorf("session.start %s = %#v, want %#v", k, start[k], want)
				}
			}
			if v := start.str("plugin_version"); !semver.MatchString(v) {
				t.Errorf("session.start plugin_version = %q, want a version", v)
			}
			if _, ok := start["model"]; ok {
				t.Errorf("session.start has a model without --model: %v", start)
			}
			for i, ev := range evs {
				if ev.str("session_id") != id {
					t.Errorf("event %d (%s): session_id = %q, want %q", i+1, ev.name(), ev.str("session_id"), id)
				}
			}

			turn := evs[1]
			if turn["turn"] != 1.0 || turn["prompt_length"] != float64(len(tc.prompt)) {
				t.Errorf("avenor.turn.start = %v, want turn 1 and prompt_length %d", turn, len(tc.prompt))
			}

			end := lastSessionEnd(t, evs)
			if end.str("stop_reason") != "end_turn" || end.str("final_output") != tc.final ||
				!reflect.DeepEqual(end["usage"], tc.usage) {
				t.Errorf("session.end = %v\nwant stop_reason end_turn, final_output %q, usage %v", end, tc.final, tc.usage)
			}
			var chunks strings.Builder
			for _, ev := range only(evs, "agent.message_chunk") {
				content, _ := ev["content"].(map[string]any)
				s, _ := content["text"].(string)
				chunks.WriteString(s)
			}
			if chunks.String() != tc.final {
				t.Errorf("message chunks say %q, final_output %q", chunks.String(), tc.final)
			}

			checkSentinel(t, sentPath, "DONE\nSESSION="+id+"\nSTOP_REASON=end_turn\nRUN="+runID+"\n")
			if tmps, _ := filepath.Glob(sentPath + "*.tmp"); len(tmps) > 0 {
				t.Errorf("the atomic sentinel write left %v behind", tmps)
			}
			if left, _ := os.ReadDir(w.tmp); len(left) > 0 {
				t.Errorf("TMPDIR holds leftovers after a clean run: %v", left)
			}
		})
	}
}

// TestStopReasons: the turn's stop reason decides the exit code and the
// sentinel (docs/run.md#exit-codes, docs/run.md#sentinel).
func TestStopReasons(t *testing.T) {
	t.Parallel()
	cases := []struct {
		script, stop, status string
		code                 int
	}{
		{"stop end_turn", "end_turn", "DONE", 0},
		{"stop max_tokens", "max_tokens", "FAILED", 3},
		{"stop refusal", "refusal", "FAILED", 2},
		{"stop max_turn_requests", "max_turn_requests", "FAILED", 4},
		{"fail x", "error", "FAILED", 1},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
			const runID = "deadbeefcafe0001"
			from := time.Now()
			res := w.run("--backend", "scripted", "--prompt", tc.script,
				"--on-event", evPath, "--sentinel-file", sentPath, "--run-id", runID)
			if res.code != tc.code {
				t.Fatalf("want exit %d; got %v", tc.code, res)
			}
			evs := readEvents(t, evPath)
			checkEnvelope(t, evs, runID, from, time.Now())
			id := sessionOf(t, evs)
			if end := lastSessionEnd(t, evs); end.str("stop_reason") != tc.stop {
				t.Errorf("session.end stop_reason = %q, want %q", end.str("stop_reason"), tc.stop)
			}
			checkSentinel(t, sentPath, sentinelBytes(tc.status, id, tc.stop, tc.code, runID))

			errs := only(evs, "avenor.error")
			if tc.stop != "error" {
				if len(errs) > 0 || res.stderr != "" {
					t.Errorf("a %s turn reported errors: %v, stderr %q", tc.stop, errs, res.stderr)
				}
				return
			}
			want := []string{"session.start", "avenor.turn.start", "avenor.error", "session.end"}
			if got := names(evs, "agent.status"); !slices.Equal(got, want) {
				t.Errorf("events: got %v, want %v", got, want)
			}
			if len(errs) != 1 || errs[0].str("source") != "backend" || errs[0].str("message") != "x" {
				t.Errorf("avenor.error = %v, want one {source: backend, message: x}", errs)
			}
			if res.stderr != "avenor: x\n" {
				t.Errorf("stderr = %q, want %q", res.stderr, "avenor: x\n")
			}
		})
	}
}

// TestOnEventTruncated: --on-event is created or truncated at start, so
// the file holds this run's events only (docs/cli.md#avenor-run).
func TestOnEventTruncated(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath := w.writeFile("events.ndjson", strings.Repeat("junk from an earlier run, not JSON\n", 4000))
	res := w.run("--backend", "scripted", "--prompt", "say hi", "--on-event", evPath, "--run-id", "r")
	if res.code != 0 {
		t.Fatalf("want exit 0; got %v", res)
	}
	evs := readEvents(t, evPath) // fails on any junk line
	want := []string{"session.start", "avenor.turn.start", "agent.message_chunk", "agent.status", "session.end"}
	if got := names(evs); !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
	if seq, _ := evs[0].num("seq"); seq != 1 {
		t.Errorf("first seq = %v, want 1", evs[0]["seq"])
	}
}

// TestNoSentinelWithoutFlag: without --sentinel-file no sentinel appears
// anywhere avenor could derive one.
func TestNoSentinelWithoutFlag(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	res := w.run("--backend", "scripted", "--prompt", "say hi")
	if res.code != 0 || res.stdout != "" || res.stderr != "" {
		t.Fatalf("want a silent exit 0; got %v", res)
	}
	if left, _ := os.ReadDir(w.work); len(left) > 0 {
		t.Errorf("the working directory holds files after a run without --on-event/--sentinel-file: %v", fmt.Sprint(left))
	}
}

// TestStaleFilesRemovedAtStart: the previous run's sentinel and permission
// files go before the first attempt (docs/run.md#lifecycle step 3), so a harness never
// mistakes them for this run's, even when this run is SIGKILLed.
func TestStaleFilesRemovedAtStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath := w.path("events.ndjson")
	sentPath := w.writeFile("run.done", "DONE\nSESSION=old\nSTOP_REASON=end_turn\n")
	stale := []string{sentPath, w.writeFile("run.perm.req", "{}\n"), w.writeFile("run.perm.req.response", "allow\n")}
	p := w.start(nil, "--backend", "scripted", "--prompt", "say a\nsleep 30s", "--on-event", evPath, "--sentinel-file", sentPath)
	waitForLog(t, evPath, `"agent.message_chunk"`, 10*time.Second)
	for _, f := range stale {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s from an earlier run is still there mid-run (stat: %v)", filepath.Base(f), err)
		}
	}
	p.signal(syscall.SIGKILL)
	p.wait()
	if _, err := os.Stat(sentPath); !os.IsNotExist(err) {
		t.Errorf("a SIGKILLed run left a sentinel (stat: %v)", err)
	}
}

// TestSentinelValuesOneLine: CR and LF inside values become spaces in the
// sentinel (docs/run.md#sentinel) while the event log keeps them; --label is stamped on every
// event as run_label (docs/events.md#the-envelope).
func TestSentinelValuesOneLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sentPath := w.path("events.ndjson"), w.path("run.done")
	const runID, label = "a\nb\rc", "nightly <1> & co"
	res := w.run("--backend", "scripted", "--prompt", "say hi", "--on-event", evPath, "--sentinel-file", sentPath,
		"--run-id", runID, "--label", label)
	if res.code != 0 {
		t.Fatalf("want exit 0; got %v", res)
	}
	evs := readEvents(t, evPath)
	checkEnvelope(t, evs, runID, time.Now().Add(-time.Minute), time.Now())
	for i, ev := range evs {
		if ev.str("run_label") != label {
			t.Errorf("event %d (%s): run_label = %q, want %q", i+1, ev.name(), ev.str("run_label"), label)
		}
	}
	checkSentinel(t, sentPath, "DONE\nSESSION="+sessionOf(t, evs)+"\nSTOP_REASON=end_turn\nRUN=a b c\n")
}

// TestSentinelDirMissing: a sentinel whose directory does not exist is not
// written; stderr says why (docs/run.md#sentinel), and the run that ended well exits 1: a
// harness waiting for the sentinel would never see it end.
func TestSentinelDirMissing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sentPath := w.path("missing/run.done")
	res := w.run("--backend", "scripted", "--prompt", "say hi", "--sentinel-file", sentPath)
	if res.code != 1 {
		t.Errorf("exit %d, want 1 (the sentinel was not written): %v", res.code, res)
	}
	if !strings.Contains(res.stderr, "avenor: writing sentinel") || !strings.Contains(res.stderr, sentPath) {
		t.Errorf("stderr does not report the unwritable sentinel %s: %v", sentPath, res)
	}
	if _, err := os.Stat(filepath.Dir(sentPath)); !os.IsNotExist(err) {
		t.Errorf("avenor created the sentinel's directory (stat: %v)", err)
	}
}

// TestPromptFile: --prompt-file sends the file's content as the prompt.
func TestPromptFile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	script := "say from\nsay \" a file\"\n"
	promptPath, evPath := w.writeFile("prompt.txt", script), w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--prompt-file", promptPath, "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("want exit 0; got %v", res)
	}
	evs := readEvents(t, evPath)
	if got := only(evs, "avenor.turn.start")[0]["prompt_length"]; got != float64(len(script)) {
		t.Errorf("prompt_length = %v, want %d", got, len(script))
	}
	if got := lastSessionEnd(t, evs).str("final_output"); got != "from a file" {
		t.Errorf("final_output = %q, want %q", got, "from a file")
	}
}
