package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/control/httpdebug"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runtime"
	"github.com/avenor-go/avenor/host/sentinel"
)

// applyRoster checks the roster flags (§1.2) and, in direct mode
// (--roster-file with --roster-entry, no loop or team file), makes the
// entry the run's backend, agent and model, and its thinking the default
// under an explicit run-level one.
func applyRoster(cmd *cobra.Command, f *runFlags, s *config.Settings) error {
	workflow := f.loopFile != "" || f.teamFile != ""
	switch {
	case f.rosterEntry == "" && f.rosterFile == "":
		return nil
	case f.rosterEntry != "" && f.rosterFile == "":
		return errors.New("--roster-entry requires --roster-file")
	case f.rosterEntry != "" && workflow:
		return errors.New("--roster-entry cannot be used with --loop-file or --team-file (set roster_entry on the phases)")
	case f.rosterEntry == "" && !workflow:
		return errors.New("--roster-file requires --roster-entry (or a --loop-file or --team-file whose phases set roster_entry)")
	case workflow:
		return nil // the fallback roster of the config's phases: runWorkflow loads it
	}
	for _, flag := range []string{"backend", "agent", "model"} {
		if cmd.Flags().Changed(flag) {
			return fmt.Errorf("--roster-entry and --%s are mutually exclusive", flag)
		}
	}
	path, err := rosterPath(f.rosterFile, s.Dir)
	if err != nil {
		return err
	}
	r, err := loop.LoadRoster(path)
	if err != nil {
		return fmt.Errorf("--roster-file %s: %w", f.rosterFile, err)
	}
	e, err := r.Lookup(f.rosterEntry)
	if err != nil {
		return fmt.Errorf("--roster-entry: %w", err)
	}
	id := loop.Identity{Thinking: s.Thinking}.FromEntry(e)
	s.Backend, s.Agent, s.Model, s.Thinking = id.Backend, id.Agent, id.Model, id.Thinking
	return nil
}

// rosterPath resolves --roster-file against the run's --dir (§1.2).
func rosterPath(file, dir string) (string, error) {
	if filepath.IsAbs(file) {
		return file, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--dir %q: %w", dir, err)
	}
	return filepath.Join(abs, file), nil
}

// backendLookup finds and configures the plugin of any backend a loop or
// team phase names.
func backendLookup(finder plugins.Finder, s config.Settings, dirs config.Dirs, logger hclog.Logger) func(string) (loop.Backend, error) {
	return func(name string) (loop.Backend, error) {
		found, err := finder.Find(name)
		if err != nil {
			return loop.Backend{}, plugins.UnknownBackendError(name, err)
		}
		cfg := s.Backends[name]
		return loop.Backend{
			Launch: func(ctx context.Context) (*plugins.Launched, error) {
				return plugins.Launch(ctx, found, name, logger)
			},
			Env: cfg.Env, PluginOptions: cfg.Options, StateDir: dirs.PluginStateDir(found.Family),
		}, nil
	}
}

// runWorkflow runs --loop-file or --team-file (§6) with the run's
// validated options: one event stream, one sentinel, every phase a run of
// its own.
func runWorkflow(ctx context.Context, cancel context.CancelCauseFunc, f *runFlags, opts hostrt.Options, perms permission.Options, env Env) int {
	kind, file := "loop", f.loopFile
	if f.teamFile != "" {
		kind, file = "team", f.teamFile
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "avenor: load %s config: %v\n", kind, err)
		if f.sentinelFile != "" {
			if werr := sentinel.Write(f.sentinelFile, sentinel.Record{ExitCode: exitFail, StopReason: sentinel.StopError, RunID: f.runID}); werr != nil {
				fmt.Fprintf(env.Stderr, "avenor: writing sentinel: %v\n", werr)
			}
		}
		return exitFail
	}
	var lo loop.LoadOptions
	if f.rosterFile != "" {
		path, err := rosterPath(f.rosterFile, opts.Dir)
		if err != nil {
			return fail(err)
		}
		if lo.Roster, err = loop.LoadRoster(path); err != nil {
			return fail(fmt.Errorf("--roster-file %s: %w", f.rosterFile, err))
		}
	}
	run := loop.Identity{Backend: opts.Backend, Agent: opts.Agent, Model: opts.Model, Thinking: opts.Thinking}
	var loopCfg *loop.LoopConfig
	var teamCfg *loop.TeamConfig
	var backends []string
	var err error
	if kind == "loop" {
		if loopCfg, err = loop.LoadLoop(file, lo); err != nil {
			return fail(err)
		}
		backends = loopCfg.Backends(run)
	} else {
		if teamCfg, err = loop.LoadTeam(file, lo); err != nil {
			return fail(err)
		}
		backends = teamCfg.Backends(run)
	}
	// Every backend a phase names must be there before the first phase runs.
	for _, b := range backends {
		if _, err := f.backends(b); err != nil {
			return failSetup(env, f, err)
		}
	}

	w := event.NewWriter(opts.Events, event.Stamp{RunID: opts.RunID, RunLabel: opts.Label}, event.Options{})
	defer w.Close()
	rts := &loop.Runtimes{Backend: f.backends, CancelRun: func() { cancel(hostrt.ErrInterrupted) }}
	perms.CancelRun = rts.Cancel
	perms.SessionID = rts.SessionID
	broker := permission.New(perms)
	base := opts
	base.Writer, base.Events = w, nil
	rts.Base = base
	rts.Permissions = hostrt.BrokerPermissions(broker)
	rts.SerialPermissions = perms.FileBase != ""
	if f.httpDebug != "" {
		target := httpdebug.NewOneShot(rts, control.BrokerAnswerer{Broker: broker})
		dbg, err := startHTTPDebug(f.httpDebug, f.httpDebugTokenFile, httpdebug.Config{Run: target, RunID: f.runID}, env, opts.Logger)
		if err != nil {
			return failSetup(env, f, err)
		}
		defer stopHTTPDebug(dbg, target)
	}
	if f.controlSocket != "" {
		srv, err := startWorkflowControl(f.controlSocket, rts, f.runID, broker, opts.Logger)
		if err != nil {
			return failSetup(env, f, err)
		}
		defer srv.Close()
		broker.SetControl(control.Resolver{Server: srv})
	}

	lopts := loop.Options{
		RunID: opts.RunID, Dir: opts.Dir, Writer: w, SentinelPath: opts.SentinelPath, Timeout: opts.Timeout,
		Initial: opts.Prompt, Identity: run, Phases: rts.Run, Stderr: env.Stderr,
	}
	var res loop.Result
	if loopCfg != nil {
		res = loop.RunLoop(ctx, loopCfg, lopts)
	} else {
		res = loop.RunTeam(ctx, teamCfg, lopts)
	}
	return res.ExitCode
}

// startWorkflowControl serves the one-shot control methods for a whole
// loop or team run: status and prompts reach the phase in flight, cancel
// the run.
func startWorkflowControl(path string, rts *loop.Runtimes, runID string, broker *permission.Broker, logger hclog.Logger) (*control.Server, error) {
	token, ready, err := control.TakeEnv()
	if err != nil {
		logger.Warn("control socket readiness", "error", err)
	}
	srv := control.NewServer(control.Config{
		Path: path, Logger: logger.Named("control"), IdentityToken: token, Ready: ready,
	})
	control.RegisterRun(srv, rts, control.RunOptions{Permissions: control.BrokerAnswerer{Broker: broker}, RunID: runID})
	if err := srv.Start(); err != nil {
		srv.Close()
		return nil, err
	}
	return srv, nil
}
