package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Rate limits (docs/unattended.md#rate-limits): a turn the provider refuses
// for a rate limit (a rate_limited error from the plugin, sdk.RateLimited)
// carries the code and the reset in its avenor.error and session.end; with
// RateLimit.Wait the turn does not end: the run waits for the reset (plus
// jitter) and sends the same prompt again on the same session, at most
// MaxResumes times.

// RateLimit configures what a run does with a turn that fails on a rate
// limit. The zero value ends the turn with the error, as before.
type RateLimit struct {
	// Wait: wait for the reset and send the turn's prompt again on the
	// same session instead of ending the turn (--wait-on-rate-limit).
	Wait bool
	// MaxResumes bounds the resumes of one run, counted with Used; the
	// rate limit after the last ends the turn with the error.
	MaxResumes int
	// Used is how many resumes runs before this one took (a wait restored
	// after a supervisor's restart).
	Used int
	// Until, when set, is a wait a run before this one began (a supervisor
	// restart): the first turn waits for it, then is sent as resume Used,
	// with no avenor.turn.start of its own (its turn began before).
	Until time.Time
	// OnWait is told when a wait begins (its end before jitter, the
	// resume's number, the prompt to send again) and when it ends (the zero
	// time); the runtime keeps it in its durable record. Nil: none.
	OnWait func(until time.Time, resume int, prompt string)
	// Yield gives the run's executing slot back for the wait; reacquire
	// takes one again before the prompt is sent (waiting while none is
	// free), or at once when ctx is done. Nil: the slot is kept.
	Yield func() (reacquire func(ctx context.Context) error)
	// Jitter is what is added to a reset; default up to RateLimitJitter at
	// random, so that runtimes limited together do not resume in step.
	Jitter func() time.Duration
}

// Bounds of rate-limit waits (docs/configuration.md#bounds).
const (
	// DefaultMaxRateLimitResumes is max_rate_limit_resumes' default.
	DefaultMaxRateLimitResumes = 5
	// MaxRateLimitResumes is the largest max_rate_limit_resumes taken.
	MaxRateLimitResumes = 100
	// RateLimitJitter is the most added at random to a reset.
	RateLimitJitter = time.Second
	// RateLimitUnknownWait is the wait when the runtime gave no reset.
	RateLimitUnknownWait = time.Minute
	// MaxRateLimitWait caps one wait: a reset further ahead is waited for
	// this long, then the prompt is sent again (a runtime that is still
	// limited says so with a new reset).
	MaxRateLimitWait = 6 * time.Hour
)

// Rate-limit events and fields.
const (
	// WaitingRateLimit is status's waiting_reason while a run waits.
	WaitingRateLimit = "rate_limit"
	// CodeRateLimited is the code of a rate-limited turn's avenor.error
	// (code) and session.end (error_code).
	CodeRateLimited = string(sdk.CodeRateLimited)
)

func (rl RateLimit) jitter() time.Duration {
	if rl.Jitter != nil {
		return rl.Jitter()
	}
	return time.Duration(rand.Int64N(int64(RateLimitJitter)))
}

// rateLimited is a turn's rate limit: when it lifts and what the runtime
// said.
type rateLimited struct {
	until   time.Time // zero: not said
	message string
}

// until3339 is the reset as the events and status write it, "" when
// none was said.
func (rl *rateLimited) until3339() string {
	if rl.until.IsZero() {
		return ""
	}
	return rl.until.UTC().Format(time.RFC3339Nano)
}

// sendTurn sends t and, while it fails on a rate limit the run may wait
// for, waits for the reset and sends its prompt again on the same session
// under a fresh turn id. restored: t is the first send after a wait a run
// before this one began (RateLimit.Until).
func (r *Runner) sendTurn(ctx context.Context, s turnSender, t sdk.Turn) turnOutcome {
	o := &r.opts
	if !o.RateLimit.Until.IsZero() {
		until := o.RateLimit.Until
		o.RateLimit.Until = time.Time{}
		if out, ok := r.waitReset(ctx, s, until, o.RateLimit.Used, t.Text); !ok {
			return out
		}
	}
	id := t.ID
	for {
		out := s.send(t)
		rl := out.rateLimit
		if rl == nil || out.pluginGone || ctx.Err() != nil {
			return out
		}
		if !o.RateLimit.Wait || o.RateLimit.Used >= o.RateLimit.MaxResumes {
			r.failRateLimited(s, &out)
			return out
		}
		o.RateLimit.Used++
		r.emitWait(s, rl, o.RateLimit.Used)
		until := rl.until
		if until.IsZero() {
			until = o.Now().Add(RateLimitUnknownWait)
		}
		if w, ok := r.waitReset(ctx, s, until, o.RateLimit.Used, t.Text); !ok {
			return w
		}
		t.ID = fmt.Sprintf("%s.rl%d", id, o.RateLimit.Used)
	}
}

// turnSender is how sendTurn reaches one session: its host (the events)
// and a send of one turn to its plugin.
type turnSender struct {
	h    *sessionHost
	send func(sdk.Turn) turnOutcome
}

// emitWait writes avenor.rate_limit.wait for the resume numbered n.
func (r *Runner) emitWait(s turnSender, rl *rateLimited, n int) {
	ev := event.Event{"event": string(event.TypeRateLimitWait), "attempt": n, "max_resumes": r.opts.RateLimit.MaxResumes, "message": rl.message}
	if u := rl.until3339(); u != "" {
		ev["until"] = u
	}
	s.h.emit(ev)
}

// waitReset waits until until plus jitter with the run's status saying so;
// false (with the turn's outcome) when the run was stopped or interrupted
// first.
func (r *Runner) waitReset(ctx context.Context, s turnSender, until time.Time, n int, prompt string) (turnOutcome, bool) {
	o := &r.opts
	if o.RateLimit.OnWait != nil {
		o.RateLimit.OnWait(until, n, prompt)
		defer o.RateLimit.OnWait(time.Time{}, n, "")
	}
	stamp := until.UTC().Format(time.RFC3339Nano)
	r.status.update(func(st *Status) { st.WaitingReason, st.RateLimitedUntil = WaitingRateLimit, stamp })
	defer r.status.update(func(st *Status) { st.WaitingReason, st.RateLimitedUntil = "", "" })
	d := min(until.Sub(o.Now()), MaxRateLimitWait)
	d = max(d, 0) + o.RateLimit.jitter()
	timer := time.NewTimer(d)
	defer timer.Stop()
	if o.RateLimit.Yield != nil {
		reacquire := o.RateLimit.Yield()
		defer func() { _ = reacquire(ctx) }() // an error is ctx's, told below
	}
	select {
	case <-timer.C:
		return turnOutcome{}, true
	case <-ctx.Done():
		return turnOutcome{stopReason: stopReasonOf(ctx), final: true, restarted: restarting(ctx)}, false
	case <-r.turns.interrupt:
		return turnOutcome{stopReason: sdk.StopCancelled, final: true, interrupted: true}, false
	}
}

// failRateLimited reports a rate-limited turn that ends with its error: an
// avenor.error (and stderr) with the code and the reset, which its
// session.end carries too.
func (r *Runner) failRateLimited(s turnSender, out *turnOutcome) {
	rl := out.rateLimit
	r.markSaid(rl.message)
	fmt.Fprintf(r.opts.Stderr, "avenor: %s\n", rl.message)
	ev := event.Event{"event": string(event.TypeError), "source": "backend", "message": rl.message, "code": CodeRateLimited}
	if out.extra == nil {
		out.extra = map[string]any{}
	}
	out.extra["error_code"] = CodeRateLimited
	if u := rl.until3339(); u != "" {
		ev["rate_limited_until"] = u
		out.extra["rate_limited_until"] = u
	}
	s.h.emit(ev)
}

// dropped: events of type typ are not written in this run — the account's
// usage windows in a run that did not ask for them (decision 20: its
// stream stays as it was).
func (r *Runner) dropped(typ sdk.EventType) bool {
	return typ == sdk.EventUsageAccount && !r.opts.ReportUsage
}

// rateLimitOf is the rate limit of a turn's error, nil when it is none.
func rateLimitOf(err error) *rateLimited {
	if err == nil || sdk.CodeOf(err) != sdk.CodeRateLimited {
		return nil
	}
	return &rateLimited{until: sdk.ResetOf(err), message: err.Error()}
}
