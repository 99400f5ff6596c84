package loop

import (
	"fmt"
	"path/filepath"
	"strings"
)

// VerifyRequest is what `avenor verify` checks (docs/loop.md#avenor-verify).
type VerifyRequest struct {
	// Dir is the base of relative paths; default ".".
	Dir string
	// LoopFile, TeamFile and RosterFile are the configs to check; at least
	// one is required. RosterFile is also the fallback roster of the
	// loop and team configs.
	LoopFile, TeamFile, RosterFile string
	// RosterEntry must be found in RosterFile.
	RosterEntry string
}

// Verify loads and validates configs without running anything, following
// nested loop_file / team_file phases. It returns one message per config
// that is fine and one per error, in the order found (docs/loop.md#avenor-verify's "ok: " and
// "error: " lines, without those prefixes).
func Verify(req VerifyRequest) (oks, errs []string) {
	v := verifier{dir: req.Dir, seen: map[string]bool{}}
	if v.dir == "" {
		v.dir = "."
	}
	var fallback *Roster
	if req.RosterFile != "" {
		fallback = v.roster(req.RosterFile, req.RosterEntry)
	}
	if req.LoopFile != "" {
		v.loop(req.LoopFile, v.abs(req.LoopFile), fallback, nil)
	}
	if req.TeamFile != "" {
		v.team(req.TeamFile, v.abs(req.TeamFile), fallback, nil)
	}
	return v.oks, v.errs
}

type verifier struct {
	dir       string
	oks, errs []string
	seen      map[string]bool
}

func (v *verifier) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(v.dir, p)
}

func (v *verifier) ok(format string, a ...any)  { v.oks = append(v.oks, fmt.Sprintf(format, a...)) }
func (v *verifier) bad(format string, a ...any) { v.errs = append(v.errs, fmt.Sprintf(format, a...)) }

func (v *verifier) roster(name, entry string) *Roster {
	r, err := LoadRoster(v.abs(name))
	if err != nil {
		v.bad("roster %s: %v", name, err)
		return nil
	}
	v.ok("roster %s (%d entries)", name, len(r.Entries))
	if entry != "" {
		if _, err := r.Lookup(entry); err != nil {
			v.bad("roster %s: entry %q: not found", name, entry)
		} else {
			v.ok("roster %s: entry %q found", name, entry)
		}
	}
	return r
}

// loop checks one loop config, shown as name, then its nested configs.
func (v *verifier) loop(name, abs string, roster *Roster, stack []string) {
	if v.cycle("loop", name, abs, stack) || v.seen[abs] {
		return
	}
	v.seen[abs] = true
	c, err := LoadLoop(abs, LoadOptions{Roster: roster, Shallow: true})
	if err != nil {
		v.bad("loop %s: %v", name, err)
		return
	}
	v.ok("loop %s (%d phases, max_iterations=%d)", name, c.PhaseCount(), c.MaxIterations)
	v.nested(name, c.Roster, append(stack, abs), c.Pre, c.Loop, c.Post)
}

func (v *verifier) team(name, abs string, roster *Roster, stack []string) {
	if v.cycle("team", name, abs, stack) || v.seen[abs] {
		return
	}
	v.seen[abs] = true
	c, err := LoadTeam(abs, LoadOptions{Roster: roster, Shallow: true})
	if err != nil {
		v.bad("team %s: %v", name, err)
		return
	}
	v.ok("team %s (%d phases)", name, c.PhaseCount())
	v.nested(name, c.Roster, append(stack, abs), c.Pre, c.Team, c.Post)
}

// nested follows loop_file / team_file phases, named relative to their
// parent as written.
func (v *verifier) nested(parent string, roster *Roster, stack []string, sections ...[]Phase) {
	dir := filepath.Dir(parent)
	for _, s := range sections {
		for _, p := range s {
			switch {
			case p.LoopFile != "":
				name := rel(dir, p.LoopFile)
				v.loop(name, v.abs(name), roster, stack)
			case p.TeamFile != "":
				name := rel(dir, p.TeamFile)
				v.team(name, v.abs(name), roster, stack)
			}
		}
	}
}

func rel(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// cycle reports a config that includes itself.
func (v *verifier) cycle(kind, name, abs string, stack []string) bool {
	for _, s := range stack {
		if s == abs {
			chain := make([]string, 0, len(stack)+1)
			for _, c := range append(append([]string{}, stack...), abs) {
				chain = append(chain, filepath.Base(c))
			}
			v.bad("%s %s: the config includes itself (%s)", kind, name, strings.Join(chain, " -> "))
			return true
		}
	}
	return false
}
