package watch

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runLine is an event line of run r1 without a session (loop and retry
// events have none).
func runLine(name, extra string) string {
	return `{"event":"` + name + `","run_id":"r1"` + extra + "}\n"
}

// followed runs a follow over log with steps written one per poll, and
// returns what it printed, the result and the number of polls.
func followed(t *testing.T, log string, cfg Config, steps ...func()) (string, Result, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	p := newPoller(&out)
	// Idle polls after the last step (settling) find nothing new.
	for range 20 {
		steps = append(steps, func() {})
	}
	wait := p.writer(ctx, steps...)
	cfg.Follow, cfg.Sleep = true, p.sleep
	res, err := Run(ctx, log, &out, cfg)
	timedOut := ctx.Err() != nil
	cancel()
	wait()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if timedOut {
		t.Fatalf("Run did not stop by itself; printed:\n%s", out.String())
	}
	return out.String(), res, len(p.snapshots)
}

const poll = DefaultPollInterval

func TestFollowLoopStopsOnlyAtLoopEnd(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ev.ndjson")
	appendFile(t, log, runLine("avenor.loop.start", `,"max_iterations":2`)+
		runLine("avenor.phase.start", `,"phase":"plan","iteration":1,"kind":"loop"`)+
		evLine("session.end", `,"stop_reason":"end_turn"`))
	nothing := func() {}
	// A settle of one poll: were the phase's session.end taken for the
	// run's, the idle polls below would end the follow.
	out, res, polls := followed(t, log, Config{Settle: poll, RetrySettle: poll},
		nothing, nothing,
		func() {
			appendFile(t, log, runLine("avenor.phase.end", `,"phase":"plan","stop_reason":"end_turn"`)+
				runLine("avenor.phase.start", `,"phase":"code","iteration":1,"kind":"loop"`))
		},
		nothing,
		func() { appendFile(t, log, evLine("session.end", `,"stop_reason":"error"`)) }, // a failed phase, then
		nothing, nothing,
		func() {
			appendFile(t, log, runLine("avenor.phase.end", `,"phase":"code","stop_reason":"error"`)+
				runLine("avenor.loop.end", `,"exit_reason":"phase_failure","iterations_completed":1`)+
				evLine("agent.message_chunk", `,"content":{"text":"after the run"}`))
		},
	)
	want := "EVENT avenor.loop.start  loop start, max_iterations=2\n" +
		"EVENT avenor.phase.start  phase: plan (iter 1)\n" +
		"EVENT session.end ses_1 stop_reason=end_turn\n" +
		"EVENT avenor.phase.end  phase: plan → end_turn\n" +
		"EVENT avenor.phase.start  phase: code (iter 1)\n" +
		"EVENT session.end ses_1 stop_reason=error\n" +
		"EVENT avenor.phase.end  phase: code → error\n" +
		"EVENT avenor.loop.end  loop end: phase_failure\n"
	if out != want || res.Ended != EndGroup || polls != 8 {
		t.Errorf("printed (Ended %q after %d polls):\n%s\nwant (group_end after 8 polls):\n%s", res.Ended, polls, out, want)
	}
}

func TestFollowTeamStopsAtTeamEnd(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ev.ndjson")
	appendFile(t, log, runLine("avenor.team.start", `,"team_member_count":2`)+
		evLine("session.end", `,"stop_reason":"refusal"`)) // one member refused: not the run's end
	out, res, _ := followed(t, log, Config{Settle: poll},
		func() {},
		func() {
			appendFile(t, log, evLine("session.end", `,"stop_reason":"end_turn"`)+
				runLine("avenor.team.end", `,"exit_reason":"phase_failure"`)+runLine("late", ""))
		})
	if res.Ended != EndGroup || strings.Count(out, "session.end") != 2 || strings.Contains(out, "late") {
		t.Errorf("Ended %q, printed:\n%s", res.Ended, out)
	}
}

func TestFollowRetryGoesOnAfterAFailedAttempt(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ev.ndjson")
	appendFile(t, log, evLine("session.start", `,"backend":"echo"`)+
		evLine("session.end", `,"stop_reason":"error"`))
	// The retry arrives within RetrySettle (3 polls) though after Settle
	// (1 poll): a failure waits for its retry longer than a clean end.
	out, res, polls := followed(t, log, Config{Settle: poll, RetrySettle: 3 * poll},
		func() {}, func() {},
		func() {
			appendFile(t, log, runLine("avenor.retry", `,"attempt":2,"max_retries":2`)+
				evLine("session.start", `,"backend":"echo"`)+evLine("session.end", `,"stop_reason":"end_turn"`))
		},
	)
	want := "EVENT session.start ses_1 backend=echo\nEVENT session.end ses_1 stop_reason=error\n" +
		"EVENT avenor.retry  attempt=2/2\nEVENT session.start ses_1 backend=echo\nEVENT session.end ses_1 stop_reason=end_turn\n"
	// After the clean end: one idle poll (Settle), then over.
	if out != want || res.Ended != EndSettled || polls != 4 {
		t.Errorf("printed (Ended %q after %d polls):\n%s\nwant (settled after 4 polls):\n%s", res.Ended, polls, out, want)
	}
}

func TestFollowStopsAtTheLastAttemptsFailure(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ev.ndjson")
	appendFile(t, log, evLine("session.end", `,"stop_reason":"error"`)+
		runLine("avenor.retry", `,"attempt":2,"max_retries":1`)+
		evLine("session.end", `,"stop_reason":"error"`)+
		runLine("late", ""))
	out, res, polls := followed(t, log, Config{})
	if res.Ended != EndSessionEnd || polls != 0 || strings.Contains(out, "late") || strings.Count(out, "session.end") != 2 {
		t.Errorf("Ended %q after %d polls, printed:\n%s", res.Ended, polls, out)
	}
}

func TestFollowStopsAtAFailureThatIsNotRetried(t *testing.T) {
	for _, stop := range []string{"refusal", "max_tokens", "timeout", "session_id_conflict", "blocked"} {
		log := filepath.Join(t.TempDir(), "ev.ndjson")
		appendFile(t, log, evLine("session.end", `,"stop_reason":"`+stop+`"`)+runLine("late", ""))
		if out, res, polls := followed(t, log, Config{}); res.Ended != EndSessionEnd || polls != 0 || strings.Contains(out, "late") {
			t.Errorf("%s: Ended %q after %d polls, printed:\n%s", stop, res.Ended, polls, out)
		}
	}
}

func TestFollowMultiTurnGoesOnWhileTurnsStart(t *testing.T) {
	log := filepath.Join(t.TempDir(), "ev.ndjson")
	appendFile(t, log, runLine("avenor.turn.start", `,"turn":1`)+evLine("session.end", `,"stop_reason":"end_turn"`))
	out, res, polls := followed(t, log, Config{Settle: 2 * poll},
		func() {},
		func() { appendFile(t, log, runLine("avenor.turn.start", `,"turn":2`)) },
		func() {}, func() {}, // a long turn: no settling while it runs
		func() { appendFile(t, log, evLine("session.end", `,"stop_reason":"cancelled"`)) }, // interrupted
		func() {},
		func() {
			appendFile(t, log, runLine("avenor.turn.start", `,"turn":3`)+evLine("session.end", `,"stop_reason":"end_turn"`))
		},
	)
	if strings.Count(out, "avenor.turn.start") != 3 || res.Ended != EndSettled || polls != 9 {
		t.Errorf("Ended %q after %d polls (want settled after 9), printed:\n%s", res.Ended, polls, out)
	}
}

func TestFollowMultiTurnStopsAtTheSentinel(t *testing.T) {
	dir := t.TempDir()
	log, sent := filepath.Join(dir, "ev.ndjson"), filepath.Join(dir, "run.done")
	// A sentinel of an earlier run at the same path: not this run's end.
	if err := os.WriteFile(sent, []byte("DONE\nSESSION=old\nSTOP_REASON=end_turn\nRUN=r0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log, runLine("avenor.turn.start", `,"turn":1`)+evLine("session.end", `,"stop_reason":"end_turn","run_id":"r1"`))
	nothing := func() {}
	out, res, polls := followed(t, log, Config{SentinelPath: sent, Settle: poll},
		nothing, nothing, nothing, // longer than Settle: the sentinel decides alone
		func() {
			appendFile(t, log, runLine("avenor.turn.start", `,"turn":2`)+evLine("session.end", `,"stop_reason":"end_turn"`))
		},
		nothing,
		func() {
			// The last lines and the sentinel between two polls: the
			// follow reads the log to its end once more.
			appendFile(t, log, runLine("last.line", ""))
			if err := os.WriteFile(sent, []byte("DONE\nSESSION=ses_1\nSTOP_REASON=end_turn\nRUN=r1\n"), 0o644); err != nil {
				t.Error(err)
			}
		},
	)
	if strings.Count(out, "session.end") != 2 || !strings.HasSuffix(out, "EVENT last.line  \n") || res.Ended != EndSentinel || polls != 6 {
		t.Errorf("Ended %q after %d polls (want sentinel after 6), printed:\n%s", res.Ended, polls, out)
	}
}

// fifo makes a named pipe and opens it for writing without waiting for a
// reader (read-write: it is then its own writer until closed).
func fifo(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return path, w
}

func TestFollowReadsAPipeUntilItCloses(t *testing.T) {
	path, w := fifo(t)
	write := func(s string) {
		if _, err := w.WriteString(s); err != nil {
			t.Error(err)
		}
	}
	write(evLine("session.start", "") + `{"event":"agent.status","ses`)
	out, res, polls := followed(t, path, Config{},
		func() { write(`sion_id":"ses_1","phase":"thinking"}` + "\n") },
		func() { write(evLine("agent.status", `,"phase":"done"`)); w.Close() },
	)
	want := "EVENT session.start ses_1 \nEVENT agent.status ses_1 thinking\nEVENT agent.status ses_1 done\n"
	if out != want || res.Ended != EndClosed || polls != 2 {
		t.Errorf("Ended %q after %d polls, printed:\n%s\nwant:\n%s", res.Ended, polls, out, want)
	}
}

func TestReadAPipeWithoutFollow(t *testing.T) {
	path, w := fifo(t)
	if _, err := w.WriteString(evLine("session.end", `,"stop_reason":"end_turn"`) + evLine("after", "")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sleeps := 0
	// Closed once Run has the pipe open (a named pipe drops what it holds
	// when nobody has it open): without --follow, a pipe is read until
	// its writer is gone, not to the first moment it is empty.
	sleep := func(context.Context, time.Duration) error {
		if sleeps++; sleeps == 2 {
			w.Close()
		}
		return nil
	}
	res, err := Run(context.Background(), path, &out, Config{Sleep: sleep})
	if err != nil || res.Events != 2 || res.Ended != EndClosed || sleeps != 2 {
		t.Errorf("Run = %+v, %v; printed %q", res, err, out.String())
	}
}

func TestCursorRefusesAPipe(t *testing.T) {
	path, _ := fifo(t)
	_, err := Run(context.Background(), path, &bytes.Buffer{}, Config{CursorPath: filepath.Join(t.TempDir(), "cur")})
	if !errors.Is(err, ErrCursorPipe) || !strings.Contains(err.Error(), "drop --since-cursor") {
		t.Errorf("Run = %v, want ErrCursorPipe naming the fix", err)
	}
}
