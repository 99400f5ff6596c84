package permission

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// What the broker does with a request that reaches "none" in the
// precedence — no auto-approve, no control client holding it, no file
// handler (--on-permission).
const (
	// UnansweredWait leaves the backend waiting until the turn ends, as the
	// contract says (docs/permission-handler.md#precedence); a late control answer is still delivered. The
	// default.
	UnansweredWait = "wait"
	// UnansweredDeny answers the request's reject option (source "avenor").
	UnansweredDeny = "deny"
	// UnansweredFail ends the attempt with an error (exit 1, no retry).
	UnansweredFail = "fail"
)

// ErrUnanswered: a request reached no handler under --on-permission fail,
// or under deny offered no reject option.
var ErrUnanswered = fmt.Errorf("permission request reached no handler")

// ValidUnanswered checks an --on-permission value.
func ValidUnanswered(policy string) error {
	switch policy {
	case "", UnansweredWait, UnansweredDeny, UnansweredFail:
		return nil
	}
	return fmt.Errorf("--on-permission %q: want wait, deny or fail", policy)
}

// unanswered settles a request that reached "none": the policy's decision,
// or (wait) the note to the user and the wait. announced says whether its
// permission.request was already emitted (a fall-through from the control
// step); if not, it is emitted here with the resolver the policy implies.
func (s *Session) unanswered(ctx context.Context, p *pending, announced bool, emit func(event.Event)) (sdk.PermissionDecision, error) {
	b := s.b
	req := p.req
	switch b.opts.Unanswered {
	case UnansweredDeny:
		opt, ok := preferredReject(req.Options)
		if !ok {
			break // handled as fail below
		}
		if !announced {
			emit(RequestEvent(req, ResolverAutomatic))
		}
		return s.decide(req, Answer{Outcome: sdk.OutcomeSelected, OptionID: opt.ID}, SourceAvenor, emit), nil
	case UnansweredFail:
	default:
		if !announced {
			emit(RequestEvent(req, ResolverNone))
		}
		if b.opts.OnUnanswered != nil {
			b.opts.OnUnanswered(req)
		}
		return s.wait(ctx, p, emit)
	}
	if !announced {
		emit(RequestEvent(req, ResolverNone))
	}
	emit(cancelledResponseEvent(req.ID, "", SourceAvenor))
	why := "--on-permission fail"
	if b.opts.Unanswered == UnansweredDeny {
		why = "--on-permission deny, but it offers no reject option"
	}
	return cancelled(), failure(ErrUnanswered, "permission request %s (%s) reached no handler (%s); answer requests with --auto-approve, --permission-handler file:<base>, --sentinel-file or --control-socket",
		req.ID, describe(req), why)
}

// UnansweredNote is what a person is told, once, when a request waits with
// nobody set up to answer it: what is asked, its options and the commands
// that answer it. controlSocket is the run's --control-socket ("" none).
func UnansweredNote(req sdk.PermissionRequest, controlSocket string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "avenor: permission request %s is waiting and nothing is set up to answer it\n", req.ID)
	fmt.Fprintf(&b, "  asks: %s\n", describe(req))
	if len(req.Options) > 0 {
		opts := make([]string, len(req.Options))
		for i, o := range req.Options {
			opts[i] = o.ID + ": " + strings.ReplaceAll(cmp.Or(o.Name, o.Kind), "\n", " ")
		}
		fmt.Fprintf(&b, "  options: %s\n", strings.Join(opts, ", "))
	}
	if controlSocket != "" && len(req.Options) > 0 {
		example, ok := preferredAllow(req.Options)
		if !ok {
			example = req.Options[0]
		}
		fmt.Fprintf(&b, "  answer it: avenor control --socket %s answer-permission %s <option>, e.g. %s\n", quote(controlSocket), quote(req.ID), quote(example.ID))
	} else {
		b.WriteString("  nothing can answer it in this run: stop it (Ctrl-C) and rerun with --auto-approve, --on-permission deny|fail,\n")
		b.WriteString("  --sentinel-file (then: avenor answer --option <id> <base>.perm) or --control-socket\n")
	}
	return b.String()
}

type askResult struct {
	a   Answer
	err error
}

// wait waits for a late control answer and, with Options.Ask, for the
// person at the terminal, whichever answers first.
func (s *Session) wait(ctx context.Context, p *pending, emit func(event.Event)) (sdk.PermissionDecision, error) {
	b := s.b
	var asked chan askResult
	if b.opts.Ask != nil {
		actx, cancel := context.WithCancel(ctx)
		defer cancel() // Ask returns once the request is decided another way
		asked = make(chan askResult, 1)
		go func() {
			a, err := b.opts.Ask(actx, p.req)
			asked <- askResult{a, err}
		}()
	}
	for {
		select {
		case a := <-p.answers:
			return s.decideAnswered(p, a, SourceControl, emit), nil
		case <-ctx.Done():
			return cancelled(), ctx.Err()
		case r := <-asked:
			asked = nil // the terminal asks once; the request may still be answered otherwise
			if r.err != nil {
				continue
			}
			r.a.Source = ""
			a, err := ValidateAnswer(r.a, p.req.Options)
			if err != nil {
				emit(warningEvent("the answer at the terminal was refused: " + err.Error()))
				continue
			}
			if !b.take(p) {
				// A control answer was accepted meanwhile: it decides.
				return s.decideAnswered(p, <-p.answers, SourceControl, emit), nil
			}
			return s.decide(p.req, a, SourceTTY, emit), nil
		}
	}
}

func describe(req sdk.PermissionRequest) string {
	q := req.Question
	if q == "" {
		q = "permission"
	}
	if req.Tool != "" && req.Tool != q {
		q += " (tool " + req.Tool + ")"
	}
	return strings.ReplaceAll(q, "\n", " ")
}

// quote quotes s for a POSIX shell when it needs it.
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// preferredAllow is the option --auto-approve picks: a one-time allow
// (allow_once) when the runtime offers one, else the first allow-kind
// option. A runtime that lists "allow for the session" first (gemini) must
// not get a session-wide grant from an unattended approval.
func preferredAllow(opts []sdk.PermissionOption) (sdk.PermissionOption, bool) {
	return preferred(opts, "allow", "allow_once")
}

// preferredReject is the option --on-permission deny picks: a one-time
// reject when offered, else the first reject-kind option.
func preferredReject(opts []sdk.PermissionOption) (sdk.PermissionOption, bool) {
	for _, once := range []string{"reject_once", "deny_once"} {
		if o, ok := preferred(opts, "reject", once); ok && strings.EqualFold(o.Kind, once) {
			return o, true
		}
	}
	return preferred(opts, "reject", "")
}

func preferred(opts []sdk.PermissionOption, kind, once string) (sdk.PermissionOption, bool) {
	if once != "" {
		for _, o := range opts {
			if strings.EqualFold(o.Kind, once) {
				return o, true
			}
		}
	}
	for _, o := range opts {
		if sdk.NormalizeKind(o.Kind) == kind {
			return o, true
		}
	}
	return sdk.PermissionOption{}, false
}

// unansweredNow settles, at Record time, a request that reaches "none" at
// once: deny and fail decide now (settled); wait announces it with resolver
// "none" and leaves the waiting to unanswered.
func (s *Session) unansweredNow(p *pending, emit func(event.Event)) (sdk.PermissionDecision, bool, error) {
	switch s.b.opts.Unanswered {
	case UnansweredDeny, UnansweredFail:
		// Neither waits, so no context can end them.
		d, err := s.unanswered(context.Background(), p, false, emit)
		return d, true, err
	}
	emit(RequestEvent(p.req, ResolverNone))
	return sdk.PermissionDecision{}, false, nil
}
