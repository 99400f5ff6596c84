package hosttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests drive `avenor watch` as a harness does: a
// follow over a log another process writes must not stop at the first
// session.end of a loop, a retried run or a multi-turn run, and a pipe is a
// log too.

// settleGap is longer than `avenor watch`'s 2 s settle after a clean
// session.end: a follow still running after it has not taken that
// session.end for the end of the run.
const settleGap = 2500 * time.Millisecond

// appendLog appends lines to a log the way the run does: whole lines, one
// write.
func appendLog(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

// exited waits up to d for the process to end and says whether it did.
func exited(p *proc, d time.Duration) bool {
	done := make(chan struct{})
	go func() { p.wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// requireRunning fails the test when the watch has already stopped.
func requireRunning(t *testing.T, p *proc, after string) {
	t.Helper()
	if exited(p, settleGap) {
		t.Fatalf("avenor watch stopped after %s, before the run was over: %v", after, p.wait())
	}
}

func TestWatchFollowLoopLogStopsAtLoopEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log := w.path("events.ndjson")
	p := w.start(nil, "watch", "--follow", "--poll-interval", "20ms", log)
	appendLog(t, log,
		`{"event":"avenor.loop.start","loop_phase_count":2,"max_iterations":1,"pre_phase_count":0,"run_id":"r1","seq":1}`,
		`{"event":"avenor.phase.start","iteration":1,"kind":"loop","phase":"code","run_id":"r1","seq":2}`,
		`{"event":"session.end","run_id":"r1","seq":3,"session_id":"ses_1","stop_reason":"end_turn"}`)
	requireRunning(t, p, "the first phase's session.end")
	appendLog(t, log,
		`{"event":"avenor.phase.end","iteration":1,"phase":"code","run_id":"r1","seq":4,"stop_reason":"end_turn"}`,
		`{"event":"avenor.phase.start","iteration":1,"kind":"loop","phase":"review","run_id":"r1","seq":5}`,
		`{"event":"agent.status","label":"go test ./...","phase":"working","run_id":"r1","seq":6,"session_id":"ses_2","source":"avenor"}`,
		`{"event":"session.end","run_id":"r1","seq":7,"session_id":"ses_2","stop_reason":"end_turn"}`)
	requireRunning(t, p, "the second phase's session.end")
	appendLog(t, log,
		`{"event":"avenor.phase.end","exit_marker":true,"exit_marker_label":"ok","iteration":1,"phase":"review","run_id":"r1","seq":8,"stop_reason":"end_turn"}`,
		`{"event":"avenor.loop.end","exit_label":"ok","exit_reason":"marker","iterations_completed":1,"run_id":"r1","seq":9}`,
		`{"event":"late.line","run_id":"r1","seq":10}`)
	if !exited(p, 10*time.Second) {
		t.Fatal("avenor watch did not stop at avenor.loop.end")
	}
	res := p.wait()
	want := "EVENT avenor.loop.start  loop start, max_iterations=1\n" +
		"EVENT avenor.phase.start  phase: code (iter 1)\n" +
		"EVENT session.end ses_1 stop_reason=end_turn\n" +
		"EVENT avenor.phase.end  phase: code → end_turn\n" +
		"EVENT avenor.phase.start  phase: review (iter 1)\n" +
		"EVENT agent.status ses_2 working | go test ./...\n" +
		"EVENT session.end ses_2 stop_reason=end_turn\n" +
		"EVENT avenor.phase.end  phase: review → end_turn\n" +
		"EVENT avenor.loop.end  loop end: marker\n"
	if res.code != 0 || res.stdout != want {
		t.Errorf("%v\nwant stdout:\n%s", res, want)
	}
}

func TestWatchFollowRetryLog(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log := w.path("events.ndjson")
	p := w.start(nil, "watch", "--follow", "--poll-interval", "20ms", log)
	appendLog(t, log,
		`{"backend":"scripted","event":"session.start","run_id":"r1","seq":1,"session_id":"ses_1"}`,
		`{"event":"session.end","run_id":"r1","seq":2,"session_id":"ses_1","stop_reason":"error"}`)
	// The failed attempt's session closes before avenor.retry is written:
	// a follow waits for it longer than after a clean end.
	if exited(p, time.Second) {
		t.Fatalf("avenor watch stopped at the failed attempt's session.end: %v", p.wait())
	}
	appendLog(t, log,
		`{"attempt":2,"event":"avenor.retry","max_retries":1,"run_id":"r1","seq":3}`,
		`{"backend":"scripted","event":"session.start","run_id":"r1","seq":4,"session_id":"ses_1"}`,
		`{"event":"session.end","run_id":"r1","seq":5,"session_id":"ses_1","stop_reason":"end_turn"}`)
	if !exited(p, 10*time.Second) {
		t.Fatal("avenor watch did not stop after the last attempt")
	}
	res := p.wait()
	want := "EVENT session.start ses_1 backend=scripted\n" +
		"EVENT session.end ses_1 stop_reason=error\n" +
		"EVENT avenor.retry  attempt=2/1\n" +
		"EVENT session.start ses_1 backend=scripted\n" +
		"EVENT session.end ses_1 stop_reason=end_turn\n"
	if res.code != 0 || res.stdout != want {
		t.Errorf("%v\nwant stdout:\n%s", res, want)
	}
}

// TestWatchFollowRealRetriedRun: a follow started before the run (the log
// does not exist yet) digests both attempts of a retried run and stops at
// the last attempt's session.end.
func TestWatchFollowRealRetriedRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log := w.path("events.ndjson")
	p := w.start(nil, "watch", "--follow", "--poll-interval", "20ms", log)
	run := w.run("--backend", "scripted", "--prompt", "announce\nfail boom", "--max-retries", "1", "--on-event", log)
	if run.code != 1 {
		t.Fatalf("run: want exit 1; got %v", run)
	}
	if !exited(p, 5*time.Second) {
		t.Fatal("avenor watch did not stop after the run's last attempt")
	}
	res := p.wait()
	if res.code != 0 || strings.Count(res.stdout, "EVENT session.end ") != 2 ||
		!strings.Contains(res.stdout, " attempt=2/1\n") ||
		!strings.HasSuffix(res.stdout, " stop_reason=error\n") {
		t.Errorf("want both attempts, ending at the last session.end; %v", res)
	}
}

func TestWatchFollowMultiTurnStopsAtTheSentinel(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	log, sent := w.path("events.ndjson"), w.path("run.done")
	// An earlier run's sentinel at the same path does not end the follow.
	w.writeFile("run.done", "DONE\nSESSION=old\nSTOP_REASON=end_turn\nRUN=r0\n")
	p := w.start(nil, "watch", "--follow", "--poll-interval", "20ms", "--sentinel-file", sent, log)
	appendLog(t, log,
		`{"event":"avenor.turn.start","prompt_length":5,"run_id":"r1","seq":1,"session_id":"ses_1","turn":1}`,
		`{"event":"session.end","run_id":"r1","seq":2,"session_id":"ses_1","stop_reason":"end_turn"}`)
	requireRunning(t, p, "the first turn's session.end")
	appendLog(t, log,
		`{"event":"avenor.turn.start","prompt_length":9,"run_id":"r1","seq":3,"session_id":"ses_1","turn":2}`,
		`{"event":"session.end","run_id":"r1","seq":4,"session_id":"ses_1","stop_reason":"end_turn"}`)
	requireRunning(t, p, "the second turn's session.end, with a stale sentinel")
	tmp := sent + ".tmp"
	if err := os.WriteFile(tmp, []byte("DONE\nSESSION=ses_1\nSTOP_REASON=end_turn\nRUN=r1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sent); err != nil {
		t.Fatal(err)
	}
	if !exited(p, 5*time.Second) {
		t.Fatal("avenor watch did not stop when the run's sentinel appeared")
	}
	res := p.wait()
	want := "EVENT avenor.turn.start ses_1 prompt_length=5 turn=1\n" +
		"EVENT session.end ses_1 stop_reason=end_turn\n" +
		"EVENT avenor.turn.start ses_1 prompt_length=9 turn=2\n" +
		"EVENT session.end ses_1 stop_reason=end_turn\n"
	if res.code != 0 || res.stdout != want {
		t.Errorf("%v\nwant stdout:\n%s", res, want)
	}
}

// TestWatchReadsStandardInput: `avenor watch -` and `avenor watch
// /dev/stdin` read a pipe as it is written and stop when it closes, with and
// without --follow.
func TestWatchReadsStandardInput(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-"}, {"--follow", "-"}, {"/dev/stdin"}, {"--follow", "--poll-interval", "20ms", "/dev/stdin"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			w := newWorld(t)
			r, wp, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer wp.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins.avenor, append([]string{"watch"}, args...)...)
			cmd.Env, cmd.Dir, cmd.Stdin = w.env, w.work, r
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if _, err := wp.WriteString(`{"event":"session.start","backend":"echo","session_id":"s1"}` + "\n" + `{"event":"agent.status","pha`); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the watch waits for the rest of the line
			if _, err := wp.WriteString(`se":"thinking","session_id":"s1"}` + "\n" + `{"event":"session.end","session_id":"s1","stop_reason":"end_turn"}` + "\n"); err != nil {
				t.Fatal(err)
			}
			wp.Close()
			err = cmd.Wait()
			want := "EVENT session.start s1 backend=echo\nEVENT agent.status s1 thinking\nEVENT session.end s1 stop_reason=end_turn\n"
			if err != nil || out.String() != want || errb.Len() != 0 {
				t.Errorf("avenor watch %v: %v\nstdout %q\nstderr %q\nwant stdout %q", args, err, out.String(), errb.String(), want)
			}
		})
	}
}

// TestWatchControlTailPipe: `avenor control --socket S tail | avenor watch -`
// digests a running one-shot run's events and ends with it.
func TestWatchControlTailPipe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock := filepath.Join(w.tmp, "run.sock")
	run := w.start(nil, "--backend", "scripted", "--control-socket", sock,
		"--prompt", "sleep 1s\nchunks 3 every=100ms text=hello\nannounce", "--on-event", w.path("events.ndjson"))
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }) {
		t.Fatalf("no control socket: %v", run.wait())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pipeline := exec.CommandContext(ctx, "sh", "-c", `"$AVENOR" control --socket "$SOCK" tail | "$AVENOR" watch -`)
	pipeline.Env = append(append([]string{}, w.env...), "AVENOR="+bins.avenor, "SOCK="+sock)
	pipeline.Dir = w.work
	var out, errb bytes.Buffer
	pipeline.Stdout, pipeline.Stderr = &out, &errb
	if err := pipeline.Run(); err != nil {
		t.Fatalf("pipeline: %v\nstdout %q\nstderr %q", err, out.String(), errb.String())
	}
	if res := run.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	got := out.String()
	if strings.Count(got, "EVENT agent.message_chunk ") < 3 || !strings.Contains(got, " hello\n") ||
		!strings.Contains(got, "EVENT session.end ") || !strings.HasPrefix(got, "EVENT ") {
		t.Errorf("pipeline printed:\n%s\nstderr %q", got, errb.String())
	}
}
