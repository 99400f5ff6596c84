package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// A supervised runtime's Spec, built from its spawn
// (docs/control-protocol.md#spawn) as Prepare builds `avenor run`'s from
// its flags, or from its durable record after a restart (RecordSpec).

// SpawnBackend is what a spawn's settings resolve to: the layered
// settings and the backend they name.
type SpawnBackend struct {
	// Settings are the layered settings; Settings.Backend names the backend.
	Settings config.Settings
	hostrt.Backend
	// Asked is the permission mode and launch context the settings ask
	// for (spawnlaunch.go); the zero value asks for nothing.
	Asked Launch
	// Sandbox is the boundary the runtime is launched inside
	// (spawnsandbox.go), resolved against the spawn's working directory
	// by ResolveSpawn and RecordSpec; the zero value is none.
	Sandbox sdk.Sandbox
	// getenv reads the supervisor's environment: $HOME, under which the
	// sandbox's deny list lies, and the sandbox's switches; nil reads none.
	getenv func(string) string
}

// Resolver resolves a spawn: dir is the spawn's absolute working directory
// (the project is found from it) and set holds the settings the spawn gave,
// keyed as host/config's keys (backend, model, agent, thinking, dir,
// timeout, max_retries, auto_approve, server_url, label, permission_mode,
// append_system_prompt, allowed_tools, mcp_config), to be layered
// over the defaults, the config files and the environment.
type Resolver func(dir string, set map[string]any) (SpawnBackend, error)

// SpawnResolver resolves a spawn as `avenor run` resolves its flags
// (Resolve): defaults < user file < project file (found from the spawn's
// dir) < env < the spawn's params, then the plugin that serves the
// backend, the project's .avenor/plugins.lock first.
func SpawnResolver(env Env) Resolver {
	return func(dir string, set map[string]any) (SpawnBackend, error) {
		res, err := Resolve(env, dir, set)
		if err != nil {
			return SpawnBackend{}, err
		}
		asked, err := spawnLaunch(res, dir, env.Getenv)
		if err != nil {
			return SpawnBackend{}, err
		}
		b, err := res.Backend(res.Settings.Backend)
		if err != nil {
			return SpawnBackend{}, err
		}
		return SpawnBackend{Settings: res.Settings, Backend: b, Asked: asked, getenv: env.Getenv}, nil
	}
}

// SpawnRequest is what a spawn asks to run, its params as given.
type SpawnRequest struct {
	Prompt, PromptFile string
	// Images are the spawn's image files (LoadImages checks them).
	Images []string
	// Dir is the spawn's dir, "" for the supervisor's working directory.
	Dir string
	// Settings are the config settings the spawn gave (host/config keys).
	Settings                                    map[string]any
	RosterFile, RosterEntry, LoopFile, TeamFile string
	// Sandbox holds the spawn's sandbox_allow_write and sandbox_deny_read.
	Sandbox SandboxFlags
}

// Spawned is a spawn resolved: its prompt, backend, checked working
// directory and, for a loop_file or team_file, its phased run with every
// phase's backend resolved.
type Spawned struct {
	Prompt  string
	Images  []sdk.Image
	Backend SpawnBackend
	Dir     string
	Phased  *Phased
}

// ResolveSpawn resolves req through resolve, as `avenor run` resolves its
// flags: the prompt read and checked, the roster entry of a direct-mode
// spawn as its backend, agent and model (docs/loop.md#rosters), the config
// layered under its settings, and a loop or team loaded before anything
// runs. A prompt the wire cannot carry is the prompt param's -32602, as
// is a dir that is no directory; a prompt_file the spawn cannot use is its
// own failure (docs/control-protocol.md#errors).
func ResolveSpawn(req SpawnRequest, resolve Resolver) (Spawned, error) {
	var sp Spawned
	sp.Prompt = req.Prompt
	if req.PromptFile != "" {
		var err error
		if sp.Prompt, err = ReadPromptFile("prompt_file", req.PromptFile); err != nil {
			return sp, err
		}
	} else if err := sdk.CheckPrompt("prompt", sp.Prompt); err != nil {
		return sp, control.InvalidParams(err.Error())
	}
	if len(req.Images) > 0 && (req.LoopFile != "" || req.TeamFile != "") {
		return sp, control.InvalidParams("images go with prompt or prompt_file, not a loop_file or team_file (their phases have prompts of their own)")
	}
	var err error
	if sp.Images, err = LoadImages("images", req.Images); err != nil {
		return sp, err
	}
	start := req.Dir
	if start == "" {
		start = "."
	}
	absStart, err := filepath.Abs(start)
	if err != nil {
		return sp, fmt.Errorf("dir %q: %w", req.Dir, err)
	}
	var roster *loop.Roster
	if req.RosterFile != "" {
		path := req.RosterFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(absStart, path)
		}
		if roster, err = loop.LoadRoster(path); err != nil {
			return sp, fmt.Errorf("roster_file %s: %w", req.RosterFile, err)
		}
	}
	keys := req.Settings
	var entry loop.RosterEntry
	if req.RosterEntry != "" {
		if entry, err = roster.Lookup(req.RosterEntry); err != nil {
			return sp, fmt.Errorf("roster_entry: %w", err)
		}
		entryKeys(entry, keys, &req)
	}
	if sp.Backend, err = resolve(absStart, keys); err != nil {
		return sp, err
	}
	if _, err := WatchdogSettings(sp.Backend.Settings, req.LoopFile != "" || req.TeamFile != "", spawnParam); err != nil {
		return sp, control.InvalidParams(err.Error())
	}
	if rl, _, err := RateLimitSettings(sp.Backend.Settings, spawnParam); err != nil {
		return sp, control.InvalidParams(err.Error())
	} else if err := RefusePhased(rl, req.LoopFile != "" || req.TeamFile != "", spawnParam); err != nil {
		return sp, control.InvalidParams(err.Error())
	}
	set := &sp.Backend.Settings
	if req.RosterEntry != "" {
		// Direct mode: the entry's thinking is the default under an
		// explicit one.
		id := loop.Identity{Thinking: set.Thinking}.FromEntry(entry)
		set.Backend, set.Agent, set.Model, set.Thinking = id.Backend, id.Agent, id.Model, id.Thinking
	}
	sp.Dir, err = WorkDir("dir", set.Dir)
	var derr *DirError
	if errors.As(err, &derr) {
		return sp, control.InvalidParams(err.Error())
	}
	if err != nil {
		return sp, err
	}
	if err := sp.Backend.resolveSandbox(req, sp.Dir); err != nil {
		return sp, err
	}
	if req.LoopFile == "" && req.TeamFile == "" {
		return sp, nil
	}
	id := loop.Identity{Backend: set.Backend, Agent: set.Agent, Model: set.Model, Thinking: set.Thinking}
	files := PhasedFiles{LoopFile: req.LoopFile, TeamFile: req.TeamFile, Dir: absStart, Roster: roster}
	sp.Phased, err = LoadPhased(files, id, func(name string) (hostrt.Backend, error) {
		if name == set.Backend {
			return sp.Backend.Backend, nil
		}
		b, err := resolve(absStart, map[string]any{"backend": name})
		return b.Backend, err
	})
	return sp, err
}

// Apply sets o to the resolved settings and backend.
func (r SpawnBackend) Apply(o *hostrt.Options) {
	set := r.Settings
	o.Backend, o.Model, o.Agent, o.Thinking, o.ServerURL = set.Backend, set.Model, set.Agent, set.Thinking, set.ServerURL
	o.AutoApprove, o.Timeout, o.ProgressTimeout, o.MaxRetries = set.AutoApprove, set.Timeout, set.ProgressTimeout, set.MaxRetries
	o.Questions = set.Questions
	o.PluginOptions, o.StateDir, o.Launch, o.Env = r.PluginOptions, r.StateDir, r.Launch, r.Env
	r.applyLaunch(o)
	o.Sandbox = r.Sandbox
	o.SandboxRecover, _ = SandboxRecoverSettings(set, r.Sandbox, false, spawnParam)
	// Checked when the spawn resolved (ResolveSpawn); a record's spawn
	// resolved again is the same.
	o.Watchdog, _ = WatchdogSettings(set, false, spawnParam)
	o.RateLimit, o.ReportUsage, _ = RateLimitSettings(set, spawnParam)
	o.ContextWarnPct, _ = ContextWarnPct(set, spawnParam)
	o.AutoCompactPct, _ = AutoCompactPct(set, false, spawnParam)
}

// Default artifact names under a supervised runtime's artifact directory.
const (
	EventsFile   = "events.ndjson"
	SentinelFile = "sentinel.env"
)

// SpawnOptions are a spawned runtime's files as its spawn named them
// ("": in Artifacts) and what its supervisor gives every runtime.
type SpawnOptions struct {
	OnEvent, SentinelFile, PermissionHandler string
	// Artifacts is the runtime's default artifact directory, made (with
	// its parent and grandparent) private when a file lives there.
	Artifacts string
	// Permissions holds the supervisor's claim and file timeouts.
	Permissions permission.Options
	Logger      hclog.Logger // named after the runtime
	Stderr      io.Writer
	Now         func() time.Time
}

// apply gives spec the supervisor's settings and its broker's options
// (fileBase: the file handler's base, "" for none).
func (f SpawnOptions) apply(spec *Spec, fileBase string) {
	o := &spec.Options
	o.Logger, o.Stderr, o.Now = f.Logger, f.Stderr, f.Now
	spec.Permissions = f.Permissions
	spec.Permissions.AutoApprove, spec.Permissions.FileBase = o.AutoApprove, fileBase
	spec.Permissions.Mode = o.PermissionMode
}

// Spec is the spawned runtime's Spec (id, its own run id runID,
// dirExplicit: the spawn gave a dir): its files made or named, its
// permission file base, the sentinel and permission files of an earlier
// runtime at those paths removed. A permission_handler that does not fit
// is -32602.
func (sp Spawned) Spec(id, runID string, dirExplicit bool, f SpawnOptions) (Spec, error) {
	spec := Spec{RuntimeID: id, Phased: sp.Phased, EventLog: f.OnEvent, Options: hostrt.Options{
		Label: sp.Backend.Settings.Label, Dir: sp.Dir, DirExplicit: dirExplicit, RunID: runID, SentinelPath: f.SentinelFile,
	}}
	o := &spec.Options
	sp.Backend.Apply(o)
	if sp.Phased == nil {
		openSpend(o, sp.Backend.Settings)
	}
	if spec.EventLog == "" || o.SentinelPath == "" {
		// The artifacts sit under a predictable name in a shared
		// directory: each level must be ours and 0700, or another user
		// who made it first would read or redirect the runtime's files.
		for _, d := range []string{filepath.Dir(filepath.Dir(f.Artifacts)), filepath.Dir(f.Artifacts), f.Artifacts} {
			if err := safefile.PrivateDir(d); err != nil {
				return spec, fmt.Errorf("runtime artifacts: %w (or give the spawn on_event and sentinel_file)", err)
			}
		}
		if spec.EventLog == "" {
			spec.EventLog = filepath.Join(f.Artifacts, EventsFile)
		}
		if o.SentinelPath == "" {
			o.SentinelPath = filepath.Join(f.Artifacts, SentinelFile)
		}
	}
	fileBase, err := permission.FileBase(f.PermissionHandler, o.SentinelPath, o.AutoApprove)
	if err != nil {
		return spec, control.InvalidParams(err.Error())
	}
	o.PermBase = fileBase
	if o.PermBase == "" {
		o.PermBase = permission.DerivePermBase(o.SentinelPath)
	}
	f.apply(&spec, fileBase)
	hostrt.CleanFiles(o.SentinelPath, o.PermBase, o.Logger.Warn)
	return spec, nil
}

// RemoveArtifacts removes the empty log and the directory a refused spawn
// got in its default artifact directory dir (paths the spawn named are
// left as they are).
func RemoveArtifacts(spec Spec, dir string) {
	for _, p := range []string{spec.EventLog, spec.Options.SentinelPath} {
		if filepath.Dir(p) == dir {
			_ = os.Remove(p)
		}
	}
	_ = os.Remove(dir) // only when empty
}

// RecordSpec is the Spec of the runtime r records, spawned as req asked:
// resolved again through resolve, with the files r names. dead says why
// the runtime cannot continue when its spawn no longer resolves or ran a
// loop or team.
func RecordSpec(r Record, req SpawnRequest, resolve Resolver, f SpawnOptions) (spec Spec, dead string) {
	str := func(key string) string { v, _ := req.Settings[key].(string); return v }
	spec = Spec{RuntimeID: r.ID, EventLog: r.OnEvent, Options: hostrt.Options{
		Backend: r.Backend, Label: r.Label, Dir: r.Dir, RunID: r.RunID, SentinelPath: r.Sentinel, PermBase: r.PermBase,
		Model: str("model"), Agent: str("agent"), Thinking: str("thinking"), DirExplicit: req.Dir != "",
	}}
	if req.LoopFile != "" || req.TeamFile != "" {
		dead = "ran a loop or team that the supervisor's restart ended"
	} else if b, err := resolve(r.Dir, r.launchSettings(req)); err != nil {
		dead = fmt.Sprintf("cannot be resumed after the supervisor's restart: %v", err)
	} else if dead = r.restoreLaunch(&b); dead == "" {
		if err := r.restoreSandbox(&b, req); err != nil {
			// Never resumed with less isolation than it was spawned with.
			dead = fmt.Sprintf("cannot be resumed after the supervisor's restart: %v", err)
		} else {
			b.Apply(&spec.Options)
			openSpend(&spec.Options, b.Settings)
		}
	}
	fileBase, err := permission.FileBase(f.PermissionHandler, r.Sentinel, spec.Options.AutoApprove)
	if err != nil {
		fileBase = ""
	}
	f.apply(&spec, fileBase)
	return spec, dead
}

// ParseTimeout reads a spawn timeout (docs/control-protocol.md#spawn): absent or null is 0, a
// JSON number is seconds, a string is a Go duration ("10m") or a number of
// seconds ("600"). Negative values are refused.
func ParseTimeout(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	bad := func(detail string) error {
		return fmt.Errorf("timeout %s: want a number of seconds (600) or a Go duration string (\"10m\")%s", raw, detail)
	}
	var secs float64
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, bad("")
		}
		s = strings.TrimSpace(s)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			secs = f
		} else {
			d, err := time.ParseDuration(s)
			if err != nil {
				return 0, bad("")
			}
			if d < 0 {
				return 0, bad(": it is negative")
			}
			return d, nil
		}
	} else if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, bad("")
	}
	if secs < 0 || math.IsNaN(secs) || secs > math.MaxInt64/float64(time.Second) {
		return 0, bad(": out of range")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// entryKeys gives a direct-mode spawn's config keys its roster entry's
// backend and the entry's keys its params did not set.
func entryKeys(entry loop.RosterEntry, keys map[string]any, req *SpawnRequest) {
	keys["backend"] = entry.Backend
	entryLaunch(entry.LaunchKeys, keys)
	entrySandboxKeys(entry.SandboxKeys, keys, req)
	for _, set := range []map[string]any{entry.RateLimitKeys.Keys(), entry.SpendKeys.Keys()} {
		for k, v := range set {
			if _, given := keys[k]; !given {
				keys[k] = v
			}
		}
	}
}
