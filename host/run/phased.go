package run

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/avenor-go/avenor/host/loop"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Phased is a loaded loop or team config (docs/loop.md) and every backend
// its phases name, resolved before the first phase runs. `avenor run
// --loop-file/--team-file` and a stable spawn's loop_file/team_file load
// it here, the same way.
type Phased struct {
	// Kind is "loop" or "team"; File the config's path as given.
	Kind, File string
	Loop       *loop.LoopConfig // set when Kind is "loop"
	Team       *loop.TeamConfig // set when Kind is "team"
	// Identity is the run-level backend, agent, model and thinking the
	// phases fall back to.
	Identity loop.Identity
	// Backends holds every backend a phase names.
	Backends map[string]hostrt.Backend
}

// LoadError is a loop or team config that does not load: the run ends
// before it starts, its sentinel saying STOP_REASON=error (docs/run.md#validation).
type LoadError struct {
	Kind string // "loop" or "team"
	Err  error
}

func (e *LoadError) Error() string { return fmt.Sprintf("load %s config: %v", e.Kind, e.Err) }
func (e *LoadError) Unwrap() error { return e.Err }

// PhasedFiles names the config to load: exactly one of LoopFile and
// TeamFile, and the fallback roster of its phases.
type PhasedFiles struct {
	LoopFile, TeamFile string
	// Dir, when set, is what a relative LoopFile or TeamFile is resolved
	// against (a spawn's dir); Phased.File keeps the path as given.
	Dir    string
	Roster *loop.Roster
}

// LoadPhased loads files' loop or team config and resolves every backend
// its phases name through resolve. A config that does not load is a
// *LoadError; a backend that does not resolve is resolve's error.
func LoadPhased(files PhasedFiles, id loop.Identity, resolve func(name string) (hostrt.Backend, error)) (*Phased, error) {
	wf := &Phased{Kind: "loop", File: files.LoopFile, Identity: id, Backends: map[string]hostrt.Backend{}}
	if files.TeamFile != "" {
		wf.Kind, wf.File = "team", files.TeamFile
	}
	path := wf.File
	if files.Dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(files.Dir, path)
	}
	lo := loop.LoadOptions{Roster: files.Roster}
	var names []string
	var err error
	if wf.Kind == "loop" {
		if wf.Loop, err = loop.LoadLoop(path, lo); err == nil {
			names = wf.Loop.Backends(id)
		}
	} else {
		if wf.Team, err = loop.LoadTeam(path, lo); err == nil {
			names = wf.Team.Backends(id)
		}
	}
	if err != nil {
		return nil, &LoadError{Kind: wf.Kind, Err: err}
	}
	// Every backend a phase names must be there before the first phase runs.
	for _, name := range names {
		b, err := resolve(name)
		if err != nil {
			return nil, err
		}
		wf.Backends[name] = b
	}
	return wf, nil
}

// Backend is the phases' loop.Runtimes.Backend.
func (wf *Phased) Backend(name string) (hostrt.Backend, error) {
	b, ok := wf.Backends[name]
	if !ok {
		return b, fmt.Errorf("unknown backend %q", name)
	}
	return b, nil
}

// Run runs the loop or the team to its end; it writes the run's one
// sentinel (o.SentinelPath).
func (wf *Phased) Run(ctx context.Context, o loop.Options) loop.Result {
	if wf.Loop != nil {
		return loop.RunLoop(ctx, wf.Loop, o)
	}
	return loop.RunTeam(ctx, wf.Team, o)
}
