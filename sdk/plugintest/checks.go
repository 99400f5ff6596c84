package plugintest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// binaryPrefix starts every plugin binary's name.
const binaryPrefix = "avenor-plugin-"

// settle is how long the kit watches for stray events after a turn ended.
const settle = 300 * time.Millisecond

// handshakeChecks: the plugin as a whole.
func (s *suite) handshakeChecks(k sink) {
	k.check("describe_names_the_plugin_and_its_version", func(*env) error {
		info := s.client.Info()
		if !plugin.ValidName(info.Name) {
			return fmt.Errorf("Describe names the plugin %q; a plugin name is lowercase letters, digits and _ (the binary is avenor-plugin-<name>)", info.Name)
		}
		if info.Version == "" {
			return fmt.Errorf("Describe reports no plugin version; set plugin.Info.Version (release builds set it with -ldflags -X)")
		}
		return nil
	})
	k.check("serves_at_least_one_backend", func(*env) error {
		served := s.client.SortedBackendNames()
		if len(served) == 0 {
			return fmt.Errorf("Describe lists no backends; pass at least one to plugin.Serve")
		}
		for i, n := range served {
			if n == "" {
				return fmt.Errorf("Describe lists a backend without a name")
			}
			if i > 0 && served[i-1] == n {
				return fmt.Errorf("Describe lists backend %q twice", n)
			}
		}
		for _, want := range s.h.Only {
			if !slices.Contains(served, want) {
				return fmt.Errorf("the harness asks for backend %q, which the plugin does not serve (it serves %s)", want, strings.Join(served, ", "))
			}
		}
		return nil
	})
	k.check("binary_is_named_after_its_family", func(*env) error {
		if !s.target.binary {
			return skipf("served in process; RunBinary checks the binary")
		}
		base := filepath.Base(s.target.name)
		fam, ok := strings.CutPrefix(base, binaryPrefix)
		if !ok {
			return skipf("the binary is named %q, not avenor-plugin-<family>, so avenor would not find it on a path; `avenor plugin install` names it", base)
		}
		if fam != s.client.Info().Name {
			return fmt.Errorf("the binary is named %s, but Describe names the plugin %q: avenor looks for avenor-plugin-%s", base, s.client.Info().Name, s.client.Info().Name)
		}
		return nil
	})
	k.check("started_by_hand_it_explains_and_exits", func(e *env) error {
		if !s.target.binary {
			return skipf("served in process; RunBinary checks the binary")
		}
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, s.target.name)
		cmd.Env = withoutCookie(os.Environ())
		out, err := cmd.CombinedOutput()
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("started without avenor's handshake, the binary was still running after 10s; plugin.Serve explains itself and exits 1")
		case err == nil:
			return fmt.Errorf("started without avenor's handshake, the binary exited 0; it should explain that avenor starts it and exit 1")
		case len(strings.TrimSpace(string(out))) == 0:
			return fmt.Errorf("started without avenor's handshake, the binary exited (%v) without a word; it should explain that avenor starts it", err)
		}
		return nil
	})
}

func withoutCookie(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, plugin.MagicCookieKey+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// describeChecks: what one backend says about itself, and Check.
func (c *bcase) describeChecks(k sink) {
	info := c.info
	k.check("capabilities_use_known_levels", func(*env) error {
		var bad []string
		for name, level := range info.Capabilities {
			switch level {
			case runtime.Supported, runtime.Unsupported, runtime.Experimental, runtime.Unverified:
			default:
				bad = append(bad, fmt.Sprintf("%s=%q", name, level))
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			return fmt.Errorf("unknown support levels %s; use supported, unsupported, experimental or unverified", strings.Join(bad, ", "))
		}
		return nil
	})
	k.check("resume_scope_matches_resume", func(*env) error {
		resume := info.Capability(runtime.CapResume)
		switch {
		case resume != runtime.Unsupported && info.ResumeScope != runtime.ResumeCrossProcess && info.ResumeScope != runtime.ResumeInProcess:
			return fmt.Errorf("resume is %s but the resume scope is %q; say %q or %q", resume, info.ResumeScope, runtime.ResumeCrossProcess, runtime.ResumeInProcess)
		case resume == runtime.Unsupported && info.ResumeScope != "":
			return fmt.Errorf("resume is not advertised but the resume scope is %q", info.ResumeScope)
		}
		return nil
	})
	k.check("thinking_levels_are_known", func(*env) error {
		seen := map[string]bool{}
		for _, l := range info.ThinkingLevels {
			if !slices.Contains(runtime.ThinkingLevels, l) {
				return fmt.Errorf("thinking level %q is not one of %s", l, strings.Join(runtime.ThinkingLevels, ", "))
			}
			if seen[l] {
				return fmt.Errorf("thinking level %q is listed twice", l)
			}
			seen[l] = true
		}
		return nil
	})
	k.check("event_types_are_listed", func(*env) error {
		if c.advertised(runtime.CapEventStreaming) && len(info.EventTypes) == 0 {
			return fmt.Errorf("event_streaming is advertised but EventTypes is empty; list every event type the backend emits")
		}
		seen := map[runtime.EventType]bool{}
		for _, t := range info.EventTypes {
			if t == "" || seen[t] {
				return fmt.Errorf("EventTypes lists %q twice or empty", t)
			}
			seen[t] = true
		}
		return nil
	})
	k.check("check_answers", func(e *env) error {
		req := runtime.OpenRequest{Backend: info.Name}
		c.s.h.Open(&req)
		ctx, cancel := context.WithTimeout(e.ctx, c.s.h.TurnTimeout)
		defer cancel()
		r := c.b.Check(ctx, runtime.CheckRequest{Backend: info.Name, Env: req.Env, Options: req.Options})
		if ctx.Err() != nil {
			return fmt.Errorf("Check did not answer within %v", c.s.h.TurnTimeout)
		}
		c.ready = &r
		if !r.Ready && r.Message == "" {
			return fmt.Errorf("Check says the runtime is not ready without saying why; Readiness.Message must say what is wrong and how to fix it")
		}
		return nil
	})
	k.check("catalog_answers", func(e *env) error {
		cat, ok := c.b.(runtime.Cataloger)
		if !ok {
			if c.advertised(runtime.CapModelListing) {
				return fmt.Errorf("model_listing is advertised but the backend does not implement runtime.Cataloger")
			}
			return nil
		}
		req := runtime.OpenRequest{Backend: info.Name}
		c.s.h.Open(&req)
		ctx, cancel := context.WithTimeout(e.ctx, c.s.h.TurnTimeout)
		defer cancel()
		got := cat.Catalog(ctx, runtime.CheckRequest{Backend: info.Name, Env: req.Env, Options: req.Options})
		if ctx.Err() != nil {
			return fmt.Errorf("Catalog did not answer within %v", c.s.h.TurnTimeout)
		}
		switch {
		case got.ModelsSupported && !c.advertised(runtime.CapModelListing):
			return fmt.Errorf("Catalog lists models but model_listing is not advertised")
		case !got.ModelsSupported && c.advertised(runtime.CapModelListing):
			return fmt.Errorf("model_listing is advertised but Catalog says the backend does not list models")
		}
		switch got.Auth {
		case "", runtime.AuthAuthenticated, runtime.AuthRequired, runtime.AuthRejected, runtime.AuthUnknown:
		default:
			return fmt.Errorf("Catalog's auth %q is not authenticated, required, rejected or unknown", got.Auth)
		}
		return nil
	})
}

// sessionChecks: open, prompt, events, cancel, close.
func (c *bcase) sessionChecks(k sink) {
	c.check(k, "refuses_undeclared_launch_context", func(x *run) error {
		return x.refusesUndeclared()
	})
	c.check(k, "open_gives_a_session_id", func(x *run) error {
		sess, err := x.mustOpen(newRecorder(c.s.h.Logger, nil), "")
		if err != nil {
			return err
		}
		if sess.ID() == "" {
			return fmt.Errorf("the session has no id; Session.ID is what --resume takes")
		}
		return nil
	})
	c.check(k, "prompt_ends_the_turn_with_end_turn", func(x *run) error {
		_, err := x.plainTurn()
		return err
	})
	c.check(k, "emitted_event_types_are_declared", func(x *run) error {
		rec, err := x.plainTurn()
		if err != nil {
			return err
		}
		var undeclared []string
		for _, ev := range rec.events() {
			if !slices.Contains(c.info.EventTypes, ev.Type) && !slices.Contains(undeclared, string(ev.Type)) {
				undeclared = append(undeclared, string(ev.Type))
			}
		}
		if len(undeclared) > 0 {
			return fmt.Errorf("the backend emitted %s, not listed in its EventTypes %v", strings.Join(undeclared, ", "), c.info.EventTypes)
		}
		return nil
	})
	c.capCheck(k, "events_stream_during_the_turn", runtime.CapEventStreaming, func(x *run) error {
		rec, err := x.plainTurn()
		if err != nil {
			return err
		}
		if len(rec.events()) == 0 {
			return fmt.Errorf("event_streaming is advertised, but a plain turn emitted no event")
		}
		return nil
	})
	c.check(k, "tool_call_updates_follow_their_tool_call", func(x *run) error {
		rec, err := x.plainTurn()
		if err != nil {
			return err
		}
		return toolCallOrder(rec.events())
	})
	c.check(k, "no_events_after_the_turn_ends", func(x *run) error {
		rec, err := x.plainTurn()
		if err != nil {
			return err
		}
		n := len(rec.events())
		time.Sleep(settle)
		if late := rec.events()[n:]; len(late) > 0 {
			return fmt.Errorf("%d events (first %s) arrived after Prompt returned; emit everything before the turn ends", len(late), late[0].Type)
		}
		return nil
	})
	c.check(k, "second_prompt_continues_the_session", func(x *run) error {
		text, sess, _, err := x.plainSession()
		if err != nil {
			return err
		}
		if err := x.endTurn(sess, text, "the first turn"); err != nil {
			return err
		}
		return x.endTurn(sess, text, "a second turn in the same session")
	})
	c.capCheck(k, "cancel_ends_the_turn_promptly", runtime.CapCancel, func(x *run) error {
		_, err := x.cancelLongTurn()
		return err
	})
	c.capCheck(k, "cancel_right_after_prompt_ends_the_turn", runtime.CapCancel, func(x *run) error {
		return x.earlyCancel()
	})
	c.capCheck(k, "session_works_after_a_cancel", runtime.CapCancel, func(x *run) error {
		sess, err := x.cancelLongTurn()
		if err != nil {
			return fmt.Errorf("cancelling the first turn: %w", err)
		}
		text, err := x.prompt(TurnPlain, "")
		if err != nil {
			return err
		}
		return x.endTurn(sess, text, "the turn after a cancelled one")
	})
	c.check(k, "cancel_between_turns_is_harmless", func(x *run) error {
		text, sess, _, err := x.plainSession()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(x.e.ctx, c.s.h.CancelWithin)
		defer cancel()
		if err := sess.Cancel(ctx); err != nil {
			return fmt.Errorf("Cancel with no turn in flight: %v; it should do nothing", err)
		}
		// sdk/plugin hands Cancel to the session asynchronously; give it
		// time to land, so what is checked is the backend's own state (a
		// cancelled flag never cleared) and not that race.
		time.Sleep(settle)
		return x.endTurn(sess, text, "the turn after an idle Cancel")
	})
	c.check(k, "close_ends_a_turn_in_flight", func(x *run) error {
		text, err := x.prompt(TurnLong, "")
		if err != nil {
			return err
		}
		rec := newRecorder(c.s.h.Logger, nil)
		sess, err := x.mustOpen(rec, "")
		if err != nil {
			return err
		}
		t, err := x.midTurn(sess, rec, text)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(x.e.ctx, c.s.h.CancelWithin)
		defer cancel()
		start := time.Now()
		if err := sess.Close(ctx); err != nil {
			return fmt.Errorf("Close during a turn: %v", err)
		}
		if !t.ended(c.s.h.CancelWithin - time.Since(start)) {
			return fmt.Errorf("the turn was still running %v after Close; Close must stop the turn and every process the session started", c.s.h.CancelWithin)
		}
		return nil
	})
	c.check(k, "close_returns_promptly", func(x *run) error {
		text, sess, _, err := x.plainSession()
		if err != nil {
			return err
		}
		if err := x.endTurn(sess, text, "a plain turn"); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(x.e.ctx, c.s.h.CancelWithin)
		defer cancel()
		if err := sess.Close(ctx); err != nil {
			return fmt.Errorf("Close: %v", err)
		}
		return nil
	})
}

// plainTurn opens a session and runs one plain turn to end_turn.
func (x *run) plainTurn() (*recorder, error) {
	text, sess, rec, err := x.plainSession()
	if err != nil {
		return nil, err
	}
	return rec, x.endTurn(sess, text, "a plain turn")
}

// plainSession opens a session, recorded by rec, for the plain turn text.
func (x *run) plainSession() (text string, sess runtime.Session, rec *recorder, err error) {
	if text, err = x.prompt(TurnPlain, ""); err != nil {
		return "", nil, nil, err
	}
	rec = newRecorder(x.c.s.h.Logger, nil)
	if sess, err = x.mustOpen(rec, ""); err != nil {
		return "", nil, nil, err
	}
	return text, sess, rec, nil
}

// cancelLongTurn cancels a long turn mid-stream and checks that it ends,
// promptly, with "cancelled".
func (x *run) cancelLongTurn() (runtime.Session, error) {
	text, err := x.prompt(TurnLong, runtime.CapCancel)
	if err != nil {
		return nil, err
	}
	rec := newRecorder(x.c.s.h.Logger, nil)
	sess, err := x.mustOpen(rec, "")
	if err != nil {
		return nil, err
	}
	t, err := x.midTurn(sess, rec, text)
	if err != nil {
		return nil, err
	}
	return sess, x.cancelled(sess, t, "Cancel")
}

// earlyCancelRounds is how many turns earlyCancel cancels: a Cancel that
// lands before the backend has begun the turn is a race, and a backend
// that drops it loses some of the rounds, not every one.
const earlyCancelRounds = 20

// promptSender is implemented by the sessions sdk/plugin gives the host.
type promptSender interface{ PromptSent(turnID string) bool }

// earlyCancel sends Cancel right after each of a few long turns' Prompt —
// as the host does for interrupt-and-prompt, possibly before the backend
// has begun the turn — and checks every one ends "cancelled" promptly: a
// cancel that arrives while a turn is starting must be remembered.
func (x *run) earlyCancel() error {
	text, err := x.prompt(TurnLong, runtime.CapCancel)
	if err != nil {
		return err
	}
	sess, err := x.mustOpen(newRecorder(x.c.s.h.Logger, nil), "")
	if err != nil {
		return err
	}
	// Over the wire the Cancel follows the Prompt on the stream; a bare
	// session is told the turn is starting, as sdk/plugin tells it, and
	// the Cancel then races Prompt's goroutine, which it usually wins.
	ps, wire := sess.(promptSender)
	for i := range earlyCancelRounds {
		if ts, ok := sess.(runtime.TurnStarter); ok && !wire {
			ts.TurnStarting()
		}
		t := x.start(sess, text)
		for wire && !ps.PromptSent(t.id) {
			select {
			case <-t.done:
				return fmt.Errorf("round %d: the turn ended before its Prompt was sent: %v", i+1, t.err)
			default:
				time.Sleep(10 * time.Microsecond)
			}
		}
		if err := x.cancelled(sess, t, "a Cancel sent right after Prompt"); err != nil {
			return fmt.Errorf("round %d of %d: %w (a cancel that arrives while a turn is starting must be remembered for that turn)", i+1, earlyCancelRounds, err)
		}
	}
	return nil
}

// cancelled sends Cancel and checks the turn ends with "cancelled" within
// CancelWithin.
func (x *run) cancelled(sess runtime.Session, t *turnRun, what string) error {
	within := x.c.s.h.CancelWithin
	ctx, cancel := context.WithTimeout(x.e.ctx, within)
	defer cancel()
	start := time.Now()
	if err := sess.Cancel(ctx); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	if !t.ended(within) {
		return fmt.Errorf("cancel is advertised, but the turn was still running %v after %s; Cancel must end the turn in flight promptly with %q", within, what, runtime.StopCancelled)
	}
	switch {
	case t.err != nil:
		return fmt.Errorf("after %s the turn failed instead of ending %q: %v", what, runtime.StopCancelled, t.err)
	case t.res.StopReason != runtime.StopCancelled:
		return fmt.Errorf("cancel is advertised, but after %s the turn ran on and ended %q %v later; Cancel must end the turn in flight with %q",
			what, t.res.StopReason, time.Since(start).Round(time.Millisecond), runtime.StopCancelled)
	}
	return nil
}

// toolCallOrder checks that every tool.call_update follows the tool.call
// that announced its toolCallId.
func toolCallOrder(events []runtime.Event) error {
	announced := map[any]bool{}
	updates := 0
	for i, ev := range events {
		switch ev.Type {
		case runtime.EventToolCall:
			announced[ev.Fields["toolCallId"]] = true
		case runtime.EventToolCallUpdate:
			updates++
			id := ev.Fields["toolCallId"]
			if !announced[id] {
				return fmt.Errorf("event %d is a tool.call_update for toolCallId %v, which no earlier tool.call announced", i+1, id)
			}
		}
	}
	if updates == 0 {
		return skipf("a plain turn made no tool call updates")
	}
	return nil
}

// permissionChecks: the permission round trip.
func (c *bcase) permissionChecks(k sink) {
	c.capCheck(k, "permission_request_reaches_the_host", runtime.CapPermissionRelay, func(x *run) error {
		rec, _, err := x.permissionTurn(decide("allow"))
		if err != nil {
			return err
		}
		reqs := rec.permissions()
		if len(reqs) == 0 {
			return fmt.Errorf("permission_relay is advertised, but the permission turn asked the host nothing")
		}
		r := reqs[0]
		if r.ID == "" {
			return fmt.Errorf("the permission request has no id")
		}
		if len(r.Options) == 0 {
			return fmt.Errorf("permission request %s offers no options", r.ID)
		}
		allow := false
		for _, o := range r.Options {
			if o.ID == "" || o.Kind == "" {
				return fmt.Errorf("permission request %s offers an option without an id or kind: %+v", r.ID, o)
			}
			allow = allow || runtime.NormalizeKind(o.Kind) == "allow"
		}
		if !allow {
			return fmt.Errorf("permission request %s offers no allow option (kinds allow_once, allow_always)", r.ID)
		}
		return nil
	})
	c.capCheck(k, "allow_lets_the_turn_finish", runtime.CapPermissionRelay, func(x *run) error {
		_, t, err := x.permissionTurn(decide("allow"))
		if err != nil {
			return err
		}
		if t.err != nil || t.res.StopReason != runtime.StopEndTurn {
			return fmt.Errorf("after an allow the turn ended %q (error: %v), want %q", t.res.StopReason, t.err, runtime.StopEndTurn)
		}
		return nil
	})
	c.capCheck(k, "reject_lets_the_turn_finish", runtime.CapPermissionRelay, func(x *run) error {
		rec, t, err := x.permissionTurn(decide("reject"))
		if err != nil {
			return err
		}
		if reqs := rec.permissions(); len(reqs) > 0 && !hasKind(reqs[0], "reject") {
			return skipf("the permission request offers no reject option")
		}
		if t.err != nil || t.res.StopReason == runtime.StopError {
			return fmt.Errorf("after a reject the turn failed (%q, %v); a rejection is an answer, not an error", t.res.StopReason, t.err)
		}
		return nil
	})
	c.capCheck(k, "cancelled_answer_ends_the_turn_cancelled", runtime.CapPermissionRelay, func(x *run) error {
		_, t, err := x.permissionTurn(cancelledAnswer)
		if err != nil {
			return err
		}
		if t.err != nil || t.res.StopReason != runtime.StopCancelled {
			return fmt.Errorf("after a %q answer the turn ended %q (error: %v), want %q", runtime.OutcomeCancelled, t.res.StopReason, t.err, runtime.StopCancelled)
		}
		return nil
	})
	c.capCheck(k, "cancel_while_a_permission_is_pending", runtime.CapPermissionRelay, func(x *run) error {
		if !c.advertised(runtime.CapCancel) {
			return skipf("%s is not advertised", runtime.CapCancel)
		}
		text, err := x.prompt(TurnPermission, runtime.CapPermissionRelay)
		if err != nil {
			return err
		}
		rec := newRecorder(c.s.h.Logger, nil) // never answers
		sess, err := x.mustOpen(rec, "")
		if err != nil {
			return err
		}
		t := x.start(sess, text)
		if err := x.awaitPermission(rec, t); err != nil {
			return err
		}
		return x.cancelled(sess, t, "Cancel with a permission pending")
	})
}

func hasKind(r runtime.PermissionRequest, kind string) bool {
	for _, o := range r.Options {
		if runtime.NormalizeKind(o.Kind) == kind {
			return true
		}
	}
	return false
}

// permissionTurn runs the permission turn with answer deciding.
func (x *run) permissionTurn(answer answerFunc) (*recorder, *turnRun, error) {
	text, err := x.prompt(TurnPermission, runtime.CapPermissionRelay)
	if err != nil {
		return nil, nil, err
	}
	rec := newRecorder(x.c.s.h.Logger, answer)
	sess, err := x.mustOpen(rec, "")
	if err != nil {
		return nil, nil, err
	}
	t := x.start(sess, text)
	<-t.done
	if len(rec.permissions()) == 0 {
		return rec, t, fmt.Errorf("permission_relay is advertised, but the permission turn ended (%q, error: %v) without asking the host", t.res.StopReason, t.err)
	}
	return rec, t, nil
}

// awaitPermission waits for the turn to ask.
func (x *run) awaitPermission(rec *recorder, t *turnRun) error {
	if !rec.waitInTurn(x.e.ctx, t, func(es []entry) bool {
		for _, e := range es {
			if e.perm != nil {
				return true
			}
		}
		return false
	}) {
		<-t.done
		return fmt.Errorf("permission_relay is advertised, but the permission turn ended (%q, error: %v) without asking the host", t.res.StopReason, t.err)
	}
	return nil
}

// unknownSession is a session id no backend knows.
const unknownSession = "avenor-plugintest-no-such-session"

// resumeChecks: sessions continue by id.
func (c *bcase) resumeChecks(k sink) {
	c.capCheck(k, "resume_continues_a_session_by_id", runtime.CapResume, func(x *run) error {
		return x.resume(false)
	})
	c.capCheck(k, "resume_of_an_unknown_session_is_refused", runtime.CapResume, func(x *run) error {
		_, err := x.open(nil, newRecorder(c.s.h.Logger, nil), "", unknownSession)
		if err == nil {
			return fmt.Errorf("resuming session %q, which never existed, succeeded; it must fail", unknownSession)
		}
		if f := runtime.FaultOf(err); f != runtime.FaultUser {
			return fmt.Errorf("resuming an unknown session failed as a %s fault (%v); it is the user's: return runtime.Errorf(runtime.FaultUser, ...)", f, err)
		}
		if !errors.Is(err, runtime.ErrSessionNotFound) {
			return fmt.Errorf("resuming an unknown session failed (%v) without the session_not_found code, so the host can only read its text; pass runtime.ErrSessionNotFound to runtime.Errorf, or use WithCode(runtime.CodeSessionNotFound)", err)
		}
		return nil
	})
	c.capCheck(k, "resume_in_a_fresh_plugin_process", runtime.CapResume, func(x *run) error {
		if c.info.ResumeScope != runtime.ResumeCrossProcess {
			return skipf("resume scope is %q, not %q", c.info.ResumeScope, runtime.ResumeCrossProcess)
		}
		return x.resume(true)
	})
}

// resume runs a turn, closes the session and resumes it by id — in a fresh
// plugin when fresh — and runs another turn there.
func (x *run) resume(fresh bool) error {
	text, err := x.prompt(TurnPlain, runtime.CapResume)
	if err != nil {
		return err
	}
	var b runtime.Backend
	if fresh {
		if _, b, err = x.launch(); err != nil {
			return err
		}
	}
	state, err := x.e.mkdir()
	if err != nil {
		return err
	}
	first, err := x.mustOpen(newRecorder(x.c.s.h.Logger, nil), state)
	if err != nil {
		return err
	}
	if err := x.endTurn(first, text, "the first turn"); err != nil {
		return err
	}
	id := first.ID()
	ctx, cancel := context.WithTimeout(x.e.ctx, x.c.s.h.TurnTimeout)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		return fmt.Errorf("Close: %v", err)
	}
	where := "the same plugin"
	if fresh {
		where = "a fresh plugin process sharing only the state directory"
	}
	again, err := x.open(b, newRecorder(x.c.s.h.Logger, nil), state, id)
	if err != nil {
		return fmt.Errorf("resume is advertised, but resuming session %s in %s failed: %v", id, where, err)
	}
	if again.ID() != id {
		return fmt.Errorf("resume is advertised, but resuming session %s in %s gave session %q", id, where, again.ID())
	}
	return x.endTurn(again, text, "a turn in the resumed session")
}

// restartChecks: a plugin that dies.
func (c *bcase) restartChecks(k sink) {
	c.check(k, "plugin_death_ends_the_turn", func(x *run) error {
		text, err := x.prompt(TurnLong, "")
		if err != nil {
			return err
		}
		pc, b, err := x.launch()
		if err != nil {
			return err
		}
		rec := newRecorder(c.s.h.Logger, nil)
		sess, err := x.open(b, rec, "", "")
		if err != nil {
			return fmt.Errorf("Open: %w", err)
		}
		t, err := x.midTurn(sess, rec, text)
		if err != nil {
			return err
		}
		x.crash(pc, sess)
		if !t.ended(c.s.h.CancelWithin) {
			return fmt.Errorf("the plugin died mid-turn, and %v later Prompt had not returned", c.s.h.CancelWithin)
		}
		if t.err == nil && t.res.StopReason == runtime.StopEndTurn && pc.PID() > 0 {
			return fmt.Errorf("the plugin was killed mid-turn, yet the turn ended %q", runtime.StopEndTurn)
		}
		return nil
	})
	c.check(k, "fresh_plugin_serves_after_a_death", func(x *run) error {
		return x.afterDeath(false)
	})
	c.capCheck(k, "fresh_plugin_resumes_after_a_death", runtime.CapResume, func(x *run) error {
		if c.info.ResumeScope != runtime.ResumeCrossProcess {
			return skipf("resume scope is %q, not %q", c.info.ResumeScope, runtime.ResumeCrossProcess)
		}
		return x.afterDeath(true)
	})
}

// afterDeath opens a session in a plugin that is then killed, and runs a
// turn in a fresh plugin sharing the state directory: in a new session, or
// when resume, in the dead plugin's session resumed by id after one turn
// there.
func (x *run) afterDeath(resume bool) error {
	var want runtime.Capability
	if resume {
		want = runtime.CapResume
	}
	text, err := x.prompt(TurnPlain, want)
	if err != nil {
		return err
	}
	pc, b, err := x.launch()
	if err != nil {
		return err
	}
	state, err := x.e.mkdir()
	if err != nil {
		return err
	}
	log := x.c.s.h.Logger
	sess, err := x.open(b, newRecorder(log, nil), state, "")
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	id := ""
	if resume {
		if err := x.endTurn(sess, text, "the first turn"); err != nil {
			return err
		}
		id = sess.ID()
	}
	x.crash(pc, sess)
	if _, b, err = x.launch(); err != nil {
		return err
	}
	again, err := x.open(b, newRecorder(log, nil), state, id)
	switch {
	case err != nil && !resume:
		return fmt.Errorf("Open in a fresh plugin after a death: %w", err)
	case err != nil:
		return fmt.Errorf("resume is advertised (%s), but a fresh plugin could not resume session %s after the first died: %v", runtime.ResumeCrossProcess, id, err)
	case !resume:
		return x.endTurn(again, text, "a turn in a fresh plugin after a death")
	case again.ID() != id:
		return fmt.Errorf("resuming session %s after a death gave session %q", id, again.ID())
	}
	return x.endTurn(again, text, "a turn in the resumed session")
}

// undeclaredOffers are a request for each permission mode, launch-context
// field and the sandbox, by the capability that declares it.
var undeclaredOffers = map[runtime.Capability]func(*runtime.OpenRequest){
	runtime.CapAppendSystemPrompt: func(r *runtime.OpenRequest) { r.Launch.AppendSystemPrompt = "plugintest" },
	runtime.CapAllowedTools:       func(r *runtime.OpenRequest) { r.Launch.AllowedTools = []string{} },
	runtime.CapMCPServers: func(r *runtime.OpenRequest) {
		r.Launch.MCPServers = []runtime.MCPServer{{Name: "plugintest", Type: runtime.MCPStdio, Command: "/bin/false"}}
	},
	runtime.CapSandbox: func(r *runtime.OpenRequest) {
		r.Sandbox = runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Writable: []string{r.Dir}}
	},
}

// refusesUndeclared opens a session with each permission mode and
// launch-context field the backend does not declare: every one must be
// refused, as the user's fault, so that no session runs broader than asked.
func (x *run) refusesUndeclared() error {
	offers := map[runtime.Capability]func(*runtime.OpenRequest){}
	for c, f := range undeclaredOffers {
		offers[c] = f
	}
	for _, m := range runtime.PermissionModes {
		offers[runtime.ModeCapability(m)] = func(r *runtime.OpenRequest) { r.PermissionMode = m }
	}
	for _, capName := range runtime.LaunchCapabilityNames {
		if x.c.info.Capability(capName) != runtime.Unsupported {
			continue
		}
		x.offer = offers[capName]
		sess, err := x.open(nil, newRecorder(x.c.s.h.Logger, nil), "", "")
		x.offer = nil
		if err == nil && sess != nil {
			return fmt.Errorf("Open accepted %s, which the backend does not declare; refuse it (runtime.CheckLaunch, runtime.CheckSandbox) so the session never runs broader than asked", capName)
		}
		if runtime.FaultOf(err) != runtime.FaultUser {
			return fmt.Errorf("Open refused %s as a %s fault (%v); it is the user's: say which modes and fields the backend supports", capName, runtime.FaultOf(err), err)
		}
	}
	return nil // a backend that declares them all has nothing to refuse
}
