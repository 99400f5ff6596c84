package run

import (
	"context"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// Env is what resolution reads from the process. The zero value reads
// nothing: no environment, no AVENOR_* layer.
type Env struct {
	// Getenv looks up one variable (XDG dirs, AVENOR_PLUGIN_PATH, PATH).
	Getenv func(string) string
	// Environ is the whole environment, for the AVENOR_* config layer.
	Environ []string
	// Logger is the launched plugins' logger; nil: none.
	Logger hclog.Logger
	// PluginEnv ("KEY=value") is added to the environment of every plugin
	// launched for the resolved backends, never to this process's: avenor
	// stable's linger window (plugin.LingerEnv). nil: they inherit this
	// process's environment only, as avenor run's do.
	PluginEnv []string
}

// Resolved is the config and the plugin finder of one run, found from its
// directory: every backend it names is looked up through it.
type Resolved struct {
	// Settings are the layered settings: defaults < user file < project
	// file < AVENOR_* environment < the caller's flags.
	Settings config.Settings
	// Provenance says which layer set each key.
	Provenance config.Provenance
	// Dirs are avenor's XDG directories.
	Dirs config.Dirs
	// Project is the project directory ("" when none was found).
	Project string
	// Finder finds plugin binaries: the project's pins first, the config's
	// family mapping, then the search order.
	Finder plugins.Finder

	logger    hclog.Logger
	pluginEnv []string
}

// Resolve layers the config for a run in dir (the project is the nearest
// directory from dir up that holds .avenor/) under flags (settings keyed as
// host/config's keys), and builds the finder with the config's family
// mapping and the project's lock. A lock that does not read is an error
// here: a pinned project never runs unpinned.
func Resolve(env Env, dir string, flags map[string]any) (*Resolved, error) {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	dirs, err := config.DefaultDirs(env.Getenv)
	if err != nil {
		return nil, err
	}
	logger := env.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	project, _ := config.FindProject(dir)
	// At debug level the config files read and the plugin (and pin) chosen
	// are logged (AVENOR_LOG=debug).
	settings, prov, err := config.Load(config.Sources{Environ: env.Environ, Dirs: dirs, ProjectDir: project, Flags: flags, Logger: logger})
	if err != nil {
		return nil, err
	}
	families := map[string]string{}
	for name, b := range settings.Backends {
		if b.Plugin != "" {
			families[name] = b.Plugin
		}
	}
	finder := plugins.NewFinder(env.Getenv, dirs.PluginDir(), families)
	finder.Logger = logger
	if project != "" {
		// The project's pins come first: a pinned family runs exactly its
		// pinned binary, hash-checked, or fails (docs/plugins.md#pin-and-lock).
		if finder.Lock, err = plugins.ReadLock(project); err != nil {
			return nil, err
		}
	}
	return &Resolved{Settings: settings, Provenance: prov, Dirs: dirs, Project: project, Finder: finder, logger: logger, pluginEnv: env.PluginEnv}, nil
}

// ResolveWorkingDir is Resolve for this process's working directory,
// without flags: what the commands that run no agent (backends, the
// completion of --backend, the claude-channel sidecar, avenor mcp's backend
// list) resolve, so that they find the binaries a run here would.
func ResolveWorkingDir(env Env) (*Resolved, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return Resolve(env, wd, nil)
}

// Find returns the binary serving backend, as Finder.Find: a *PinError for
// a pinned family whose pin cannot be used, a *NotFoundError when none.
func (r *Resolved) Find(backend string) (plugins.Found, error) { return r.Finder.Find(backend) }

// Backend resolves backend to its plugin and config. A backend no plugin
// serves is run's message: `unknown backend "X"` and where avenor looked.
func (r *Resolved) Backend(backend string) (hostrt.Backend, error) {
	found, err := r.Find(backend)
	if err != nil {
		return hostrt.Backend{}, plugins.UnknownBackendError(backend, err)
	}
	return r.Configure(backend, found), nil
}

// Configure is the backend served by found, with its [backends.<name>]
// env and options and its family's state directory.
func (r *Resolved) Configure(backend string, found plugins.Found) hostrt.Backend {
	cfg := r.Settings.Backends[backend]
	launch := plugins.LaunchOptions{Logger: r.logger, Env: r.pluginEnv}
	return hostrt.Backend{
		Name: backend, Found: found, Env: cfg.Env, PluginOptions: cfg.Options, StateDir: r.Dirs.PluginStateDir(found.Family),
		Launch: func(ctx context.Context) (*plugins.Launched, error) {
			return plugins.LaunchWith(ctx, found, backend, launch)
		},
	}
}
