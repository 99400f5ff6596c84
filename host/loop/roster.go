package loop

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// RosterEntry is one named loadout of a roster file (docs/loop.md#rosters): backend and at
// least one of agent and model, and optionally a default thinking level
// that an explicit run-level --thinking overrides.
type RosterEntry struct {
	Backend  string `json:"backend"`
	Agent    string `json:"agent,omitempty"`
	Model    string `json:"model,omitempty"`
	Thinking string `json:"thinking,omitempty"`
	// LaunchKeys are the entry's permission mode and launch context.
	LaunchKeys
	// SandboxKeys are the entry's sandbox, for direct mode only.
	SandboxKeys
	// RateLimitKeys are the entry's rate-limit settings (direct mode).
	RateLimitKeys
	// SpendKeys are the entry's spend limits and context settings (direct
	// mode).
	SpendKeys
}

// Roster is a loaded roster file.
type Roster struct {
	// Path is the file's absolute path.
	Path    string
	Entries map[string]RosterEntry
}

// LoadRoster reads a roster: a JSON object of name -> entry, decoded
// strictly (system and any other unknown key is refused, so no setting
// silently does nothing).
func LoadRoster(path string) (*Roster, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var entries map[string]RosterEntry
	if err := decodeFile(abs, &entries); err != nil {
		return nil, err
	}
	r := &Roster{Path: abs, Entries: entries}
	for _, name := range r.Names() {
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("entry names must not be empty")
		}
		if err := entries[name].validate(); err != nil {
			return nil, fmt.Errorf("entry %q: %w", name, err)
		}
		e := entries[name]
		e.LaunchKeys = e.LaunchKeys.rel(filepath.Dir(abs))
		e.SandboxKeys = e.SandboxKeys.rel(filepath.Dir(abs))
		entries[name] = e
	}
	return r, nil
}

// Names lists the entries, sorted.
func (r *Roster) Names() []string {
	names := make([]string, 0, len(r.Entries))
	for n := range r.Entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the named entry; a missing name is an error, never a
// fallback to another identity.
func (r *Roster) Lookup(name string) (RosterEntry, error) {
	e, ok := r.Entries[name]
	if !ok {
		return RosterEntry{}, fmt.Errorf("roster entry %q not found in %s", name, r.Path)
	}
	return e, nil
}

func (e RosterEntry) validate() error {
	if strings.TrimSpace(e.Backend) == "" {
		return fmt.Errorf("backend must not be empty")
	}
	if strings.TrimSpace(e.Agent) == "" && strings.TrimSpace(e.Model) == "" {
		return fmt.Errorf("at least one of agent or model must be set")
	}
	if err := e.LaunchKeys.check(); err != nil {
		return err
	}
	if err := e.SandboxKeys.check(); err != nil {
		return err
	}
	if err := e.SpendKeys.check(); err != nil {
		return err
	}
	return CheckThinkingLevel(e.Thinking)
}

// CheckThinkingLevel refuses a level outside the --thinking vocabulary
// (docs/backends.md#capability-matrix) with the same words as --thinking; whether the backend accepts it
// is checked when its plugin starts.
func CheckThinkingLevel(level string) error {
	if level == "" {
		return nil
	}
	for _, l := range sdk.ThinkingLevels {
		if l == level {
			return nil
		}
	}
	return fmt.Errorf("invalid thinking level %q; valid levels: %s", level, strings.Join(sdk.ThinkingLevels, ", "))
}

// Identity is who runs a phase: backend, agent, model and thinking level.
type Identity struct {
	Backend, Agent, Model, Thinking string
	// LaunchKeys are the phase's own permission mode and launch context
	// (its roster entry's, under its own); zero: the run's.
	LaunchKeys
}

func (id Identity) String() string {
	return fmt.Sprintf("backend %q, agent %q, model %q", id.Backend, id.Agent, id.Model)
}

// sameSession reports whether a session of id can be resumed as other: the
// backend, agent and model must all match (docs/cli.md#avenor-run).
func (id Identity) sameSession(other Identity) bool {
	return id.Backend == other.Backend && id.Agent == other.Agent && id.Model == other.Model
}

// FromEntry is the identity a roster entry selects over run: the entry's
// backend, agent and model; its thinking unless run sets one explicitly.
func (run Identity) FromEntry(e RosterEntry) Identity {
	id := Identity{Backend: e.Backend, Agent: e.Agent, Model: e.Model, Thinking: e.Thinking, LaunchKeys: e.LaunchKeys}
	if run.Thinking != "" {
		id.Thinking = run.Thinking
	}
	return id
}

// forPhase is the identity a phase of kind runs with: its roster entry's,
// else for a team member its agent/model overrides (an agent without a
// model leaves the model to the agent's own config), else the run's.
func (run Identity) forPhase(p *Phase, kind string, roster *Roster) (Identity, error) {
	id, err := run.phaseIdentity(p, kind, roster)
	id.LaunchKeys = id.LaunchKeys.Over(p.LaunchKeys)
	return id, err
}

// phaseIdentity is forPhase without the phase's own launch keys.
func (run Identity) phaseIdentity(p *Phase, kind string, roster *Roster) (Identity, error) {
	if p.RosterEntry != "" {
		if roster == nil {
			return run, fmt.Errorf("phase %q: roster_entry %q needs a roster", p.Name, p.RosterEntry)
		}
		e, err := roster.Lookup(p.RosterEntry)
		if err != nil {
			return run, fmt.Errorf("phase %q: %w", p.Name, err)
		}
		if err := directOnly(e); err != nil {
			return run, fmt.Errorf("phase %q: roster entry %q %w", p.Name, p.RosterEntry, err)
		}
		return run.FromEntry(e), nil
	}
	id := run
	if kind == KindTeam {
		if p.Agent != "" {
			id.Agent, id.Model = p.Agent, ""
		}
		if p.Model != "" {
			id.Model = p.Model
		}
	}
	return id, nil
}

// Backends lists the backends a loop config's phases run on, nested
// configs included, so that a run can check them all before it starts.
func (c *LoopConfig) Backends(run Identity) []string {
	set := map[string]bool{}
	collect(set, run, c.Roster, [][]Phase{c.Pre, c.Loop, c.Post}, []string{KindPre, KindLoop, KindPost})
	return sortedKeys(set)
}

// Backends lists the backends a team config's phases run on.
func (c *TeamConfig) Backends(run Identity) []string {
	set := map[string]bool{}
	collect(set, run, c.Roster, [][]Phase{c.Pre, c.Team, c.Post}, []string{KindPre, KindTeam, KindPost})
	return sortedKeys(set)
}

func collect(set map[string]bool, run Identity, roster *Roster, sections [][]Phase, kinds []string) {
	for k, s := range sections {
		for i := range s {
			p := &s[i]
			switch {
			case p.NestedLoop != nil:
				for _, b := range p.NestedLoop.Backends(run) {
					set[b] = true
				}
			case p.NestedTeam != nil:
				for _, b := range p.NestedTeam.Backends(run) {
					set[b] = true
				}
			default:
				if id, err := run.forPhase(p, kinds[k], roster); err == nil && id.Backend != "" {
					set[id.Backend] = true
				}
			}
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// directOnly refuses an entry whose keys a loop or team phase does not
// carry: a phase of it would run outside the boundary, without the wait or
// past the limit the entry asks for (fail closed).
func directOnly(e RosterEntry) error {
	var what, keys string
	switch {
	case !e.SandboxKeys.IsZero():
		what, keys = "a sandbox", "sandbox"
	case !e.RateLimitKeys.IsZero():
		what, keys = "rate-limit settings", "wait_on_rate_limit and max_rate_limit_resumes"
	case !e.SpendKeys.IsZero():
		what, keys = "spend limits or context settings", "spend_* and *_pct"
	default:
		return nil
	}
	return fmt.Errorf("sets %s, which loop and team phases do not carry yet; run the entry on its own (--roster-entry) or drop its %s keys", what, keys)
}
