package watch

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// DefaultSettle is how long `--follow` waits, with nothing new in the log,
// after a session.end that more turns could follow (a clean or cancelled
// end outside a loop or team) before it takes the run as over. A next turn
// or an interrupt's turn starts at once (docs/run.md#multi-turn), so its
// avenor.turn.start arrives long before this.
const DefaultSettle = 2 * time.Second

// DefaultRetrySettle is the same wait after a session.end that a retry could
// follow (a retryable failure, docs/run.md#retry, before the last attempt is known):
// avenor.retry comes only after the failed attempt's session is closed,
// which the host gives 5 seconds, so this waits a little longer.
const DefaultRetrySettle = 6 * time.Second

// End says why a follow stopped; "" when it did not (the log was read to its
// end without --follow, or ctx ended).
type End string

// The ways a follow ends.
const (
	// EndGroup: the avenor.loop.end or avenor.team.end that closes the run.
	EndGroup End = "group_end"
	// EndSessionEnd: a session.end nothing can follow: a failure that is
	// not retried, or a retryable one in the last attempt.
	EndSessionEnd End = "session_end"
	// EndSentinel: Config.SentinelPath appeared for this run, and the log
	// was then read to its end.
	EndSentinel End = "sentinel"
	// EndSettled: after a session.end that more could follow, nothing new
	// came for the settle time.
	EndSettled End = "settled"
	// EndClosed: the log is a pipe and its writer closed it.
	EndClosed End = "closed"
)

// runTracker follows the events of a log to tell when its run is over
// (as in the original avenor): a loop or team ends with its end event, not at a phase's
// session.end; a one-shot run writes a session.end per turn and per attempt,
// and only the log's context says whether another can follow.
type runTracker struct {
	// groups counts the loops and teams open; a phase event seen outside
	// one (a watch resumed from a cursor mid-loop) opens one.
	groups int
	// settling: the last session.end outside a group may be the last.
	settling bool
	// retryable: that session.end was a failure a retry could follow.
	retryable bool
	// lastAttempt: an avenor.retry announced the last attempt.
	lastAttempt bool
	// runID is the first run_id of the log (matched against the
	// sentinel's RUN= line).
	runID string
	// events counts the events seen.
	events int
}

// observe takes one event and says whether the run is over with it.
func (t *runTracker) observe(ev Event) (End, bool) {
	t.events++
	if t.runID == "" {
		t.runID = ev.str("run_id")
	}
	switch ev.Name() {
	case sdk.EventLoopStart, sdk.EventTeamStart:
		t.groups++
		t.settling = false
	case sdk.EventPhaseStart, sdk.EventPhaseEnd:
		if t.groups == 0 {
			t.groups = 1
		}
		t.settling = false
	case sdk.EventLoopEnd, sdk.EventTeamEnd:
		if t.groups > 0 {
			t.groups--
		}
		if t.groups == 0 {
			return EndGroup, true
		}
	case sdk.EventRetry:
		a, errA := strconv.Atoi(ev.str("attempt"))
		m, errM := strconv.Atoi(ev.str("max_retries"))
		// attempt is the number of the attempt about to run (docs/events.md#avenorretry),
		// and there are max_retries+1 attempts in all.
		t.lastAttempt = errA == nil && errM == nil && a > m
		t.settling = false
	case sdk.EventSessionStart, sdk.EventTurnStart:
		t.settling = false
	case sdk.EventSessionEnd:
		if t.groups > 0 {
			return "", false
		}
		stop := sdk.StopReason(ev.str("stop_reason"))
		exit := sentinel.ExitCode(stop)
		switch {
		case exit == sentinel.ExitOK || exit == sentinel.ExitCancelled:
			// A queued prompt, or an interrupt's text, may start the next
			// turn.
			t.settling, t.retryable = true, false
		case sentinel.Retryable(exit, stop) && !t.lastAttempt:
			t.settling, t.retryable = true, true
		default:
			return EndSessionEnd, true
		}
	}
	return "", false
}

// settle is how long to wait for more after the session.end that started
// settling.
func (t *runTracker) settle(cfg Config) time.Duration {
	if t.retryable {
		return cfg.RetrySettle
	}
	return cfg.Settle
}

// sentinelWritten says whether the sentinel at path is this run's: it
// exists, and its RUN= line names the log's run_id. A sentinel without a RUN=
// line, or a log without run_id, counts once the log has shown an event. A
// sentinel of another run (a harness reusing the path before the new run
// removed it) does not count.
func (t *runTracker) sentinelWritten(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return false
	}
	run := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("RUN=")); ok {
			run = string(v)
		}
	}
	if run != "" && t.runID != "" {
		return run == t.runID
	}
	return t.events > 0
}
