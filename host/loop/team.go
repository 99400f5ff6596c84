package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sentinel"
)

// errTeamAbort is the cause members are cancelled with when one aborts.
var errTeamAbort = errors.New("another team member aborted")

// team runs a team config (docs/loop.md#teams): pre phases serially, the members in
// parallel in fresh sessions, post phases serially if every member
// succeeded.
func (r *runner) team(ctx context.Context, cfg *TeamConfig, initial string) Result {
	pre := withInitial(cfg.Pre, initial)
	r.emit(event.Event{"event": string(event.TypeTeamStart), "pre_phase_count": len(pre),
		"team_member_count": len(cfg.Team), "post_phase_count": len(cfg.Post)})

	var ch chain
	session, decider := "", ""
	var out TeamOutcome
	var skipped []string

	// serial runs pre or post phases; it returns the end when one ended the
	// run.
	serial := func(phases []Phase, kind, failure string, extra func(int) string) ([]string, *End) {
		var skips []string
		for i := range phases {
			if ctx.Err() != nil {
				e := stopEnd(stopReason(ctx))
				return nil, &e
			}
			p := &phases[i]
			res := r.phase(ctx, p, kind, 0, r.teamVars(ctx, p.Name, ch), cfg.Roster, &ch, i > 0, extra(i))
			if res.SessionID != "" {
				session = res.SessionID
			}
			switch {
			case ctx.Err() != nil:
				e := stopEnd(stopReason(ctx))
				return nil, &e
			case !res.clean():
				decider = p.Name
				return nil, &End{Reason: failure, Decider: Step{Kind: kind, Index: i},
					ExitCode: sentinel.ExitCode(res.StopReason), StopReason: res.StopReason}
			case res.Marker.Directive == Abort:
				decider = p.Name
				return nil, &End{Reason: ReasonAbort, Label: res.Marker.Label, Decider: Step{Kind: kind, Index: i},
					ExitCode: sentinel.ExitBlocked, StopReason: sentinel.StopBlocked}
			}
			skips = append(skips, res.Skips...)
		}
		return skips, nil
	}

	instructions := skipInstructions(cfg.Team)
	skips, end := serial(pre, KindPre, ReasonPreFailure, func(i int) string {
		if i == len(pre)-1 {
			return instructions
		}
		return ""
	})
	if end == nil {
		var members []int
		members, skipped = ConditionalSkips(cfg.Team, skips)
		out = r.members(ctx, cfg, members, ch, &session, &decider)
		switch {
		case ctx.Err() != nil:
			e := stopEnd(stopReason(ctx))
			end = &e
		case out.End.Reason != ReasonEndTurn:
			end = &out.End
		default:
			// Post phases see what the members changed, from the pre
			// phases' commit to whatever HEAD the members left.
			ch = chain{base: ch.commit, commit: head(context.WithoutCancel(ctx), r.o.Git, r.o.Dir)}
			_, end = serial(cfg.Post, KindPost, ReasonPostFailure, func(int) string { return "" })
		}
	}
	if end != nil {
		out.End = *end
	} else {
		out.End = End{Reason: ReasonEndTurn, ExitCode: sentinel.ExitOK, StopReason: sentinel.StopEndTurn}
	}
	ev := event.Event{"event": string(event.TypeTeamEnd), "exit_reason": out.End.Reason,
		"members_completed": out.Completed, "members_aborted": out.Aborted}
	r.decided(ev, out.End, decider, false)
	if len(skipped) > 0 {
		ev["members_skipped"] = skipped
	}
	r.emit(ev)
	return result(out.End, session)
}

func stopEnd(reason string) End {
	m := Machine{}
	m.Stop(reason)
	return m.End()
}

func (r *runner) teamVars(ctx context.Context, phase string, ch chain) TeamVars {
	d := delta(ctx, r.o.Git, r.o.Dir, ch.base, ch.commit)
	return TeamVars{RunID: r.o.RunID, Phase: phase, WorkDir: r.o.Dir,
		PrevPhaseCommit: d.PrevPhaseCommit, DiffStat: d.DiffStat, ChangedFiles: d.ChangedFiles}
}

// members runs the chosen members in parallel; the first clean abort
// cancels the others.
func (r *runner) members(ctx context.Context, cfg *TeamConfig, idx []int, pre chain, session, decider *string) TeamOutcome {
	if len(idx) == 0 {
		return DecideTeam(nil)
	}
	mctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type done struct {
		index int
		res   phaseResult
	}
	results := make(chan done, len(idx))
	for _, i := range idx {
		go func() {
			p := &cfg.Team[i]
			ch := chain{base: pre.base, commit: pre.commit} // every member starts from the pre phases' commit
			results <- done{i, r.phase(mctx, p, KindTeam, 0, r.teamVars(mctx, p.Name, ch), cfg.Roster, &ch, false, "")}
		}()
	}
	ends := make([]MemberEnd, 0, len(idx))
	aborted := false
	for range idx {
		d := <-results
		e := MemberEnd{Index: d.index, StopReason: d.res.StopReason, Marker: d.res.Marker}
		if !d.res.clean() && aborted {
			e.StoppedByAbort = true
		}
		// The sentinel names the last member to end, or the first to abort.
		if d.res.SessionID != "" && !aborted {
			*session = d.res.SessionID
		}
		if d.res.clean() && d.res.Marker.Directive == Abort && !aborted {
			aborted = true
			cancel(errTeamAbort)
		}
		ends = append(ends, e)
	}
	out := DecideTeam(ends)
	if out.End.Decider.Kind != "" {
		*decider = cfg.Team[out.End.Decider.Index].Name
	}
	return out
}

// skipInstructions tells the last pre phase how to skip conditional members
// (docs/loop.md#teams); "" when there are none. It is one Markdown line of its own, after
// a blank line, so it reads as a note and changes nothing above it.
func skipInstructions(team []Phase) string {
	var names []string
	for _, p := range team {
		if p.Conditional {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("\n\n# Note from avenor: after this phase a team runs in parallel, and these members are optional: %s. "+
		"To skip one, write a line that holds only <|team: skip | NAME|> with NAME its name (one line per member, outside code blocks and quotes); "+
		"a member you do not skip runs.", strings.Join(names, ", "))
}
