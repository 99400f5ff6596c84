package run

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/permission"
	hostrt "github.com/avenor-go/avenor/host/runner"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Request is one `avenor run` as its command line gave it (docs/cli.md#avenor-run),
// before the config is layered under it. Errors name the flags.
type Request struct {
	// Start is where the project (and its config) is looked for: the run's
	// --dir when the command line gave one, else the working directory.
	Start string
	// Settings are the flags the command line set that are config keys,
	// keyed as host/config's keys (backend, dir, timeout, max_retries…).
	Settings map[string]any
	// Prompt is --prompt; PromptFile --prompt-file, "-" reading Stdin.
	Prompt, PromptFile string
	// Images are --image's files, sent with the prompt.
	Images []string
	Stdin  io.Reader
	// LoopFile or TeamFile makes a loop or team run; RosterFile and
	// RosterEntry select a roster loadout (direct mode) or give the phases
	// their fallback roster.
	LoopFile, TeamFile, RosterFile, RosterEntry string
	// Resume is --resume, a session id.
	Resume string
	// RunID is the run's correlation id (the caller makes one when the
	// command line did not).
	RunID string
	// SentinelFile is --sentinel-file; PermissionHandler
	// --permission-handler; OnPermission --on-permission (a
	// permission.Unanswered* value, "" for wait).
	SentinelFile, PermissionHandler, OnPermission string
	// PonyConfig is --pony-config, required by backend pony.
	PonyConfig string
	// HTTPDebug and HTTPDebugTokenFile are only checked (a token file
	// needs the adapter): the caller starts the adapter (Spec.HTTPDebug).
	HTTPDebug, HTTPDebugTokenFile string
	// Stderr gets the runner's own messages.
	Stderr io.Writer
	// Sandbox holds the repeatable sandbox flags; --sandbox and
	// --sandbox-network arrive through Settings.
	Sandbox SandboxFlags
}

// Prepared is a validated one-shot run: Spec holds its options and its
// permission broker's; the caller adds the event log, the control socket,
// the HTTP debug adapter and the live view, then loads the phased run of a
// loop or team run (Phased) and calls Start.
type Prepared struct {
	Spec Spec

	req      Request
	backends func(name string) (hostrt.Backend, error)
}

// PermissionFileTimeoutEnv replaces the file handler's 10 min timeout with
// a Go duration; it exists for tests and is not part of the contract.
const PermissionFileTimeoutEnv = "AVENOR_PERMISSION_FILE_TIMEOUT"

// QuestionTimeoutEnv replaces the 10 min bound on a runtime's question
// (permission.DefaultQuestionTimeout) with a Go duration.
const QuestionTimeoutEnv = "AVENOR_QUESTION_TIMEOUT"

// MaxStdinPrompt bounds a prompt read from stdin (--prompt-file -).
const MaxStdinPrompt = 16 << 20

// Prepare layers the config under req, resolves its backend and checks the
// command line in the contract's validation order (docs/run.md#validation): the roster
// flags, the exclusive flags, the prompt (a prompt the wire cannot carry —
// not UTF-8, over sdk.MaxPromptBytes — is the user's to fix, refused here
// rather than by a plugin's broken stream), the working directory, then
// the permission broker's options.
func Prepare(env Env, req Request) (*Prepared, error) {
	absStart, err := filepath.Abs(req.Start)
	if err != nil {
		return nil, fmt.Errorf("--dir %q: %w", req.Start, err)
	}
	res, err := Resolve(env, absStart, req.Settings)
	if err != nil {
		return nil, err
	}
	if err := req.applyRoster(&res.Settings, res.Provenance); err != nil {
		return nil, err
	}
	settings := res.Settings
	backend, err := res.Backend(settings.Backend)
	if err != nil {
		return nil, err
	}
	switch {
	case settings.Backend == "pony" && req.PonyConfig == "":
		return nil, errors.New("--pony-config is required for backend pony")
	}
	src := Sources{Prompt: req.Prompt, PromptFile: req.PromptFile, LoopFile: req.LoopFile, TeamFile: req.TeamFile, Resume: req.Resume}
	if err := src.Check(FlagName); err != nil {
		return nil, err
	}
	if req.HTTPDebugTokenFile != "" && req.HTTPDebug == "" {
		return nil, errors.New("--http-debug-token-file needs --http-debug")
	}
	prompt, err := req.prompt()
	if err != nil {
		return nil, err
	}
	if len(req.Images) > 0 && (req.LoopFile != "" || req.TeamFile != "") {
		return nil, errors.New("--image goes with --prompt or --prompt-file, not a loop or team run (their phases have prompts of their own)")
	}
	images, err := LoadImages("--image", req.Images)
	if err != nil {
		return nil, err
	}
	dir, err := WorkDir("--dir", settings.Dir)
	if err != nil {
		return nil, err
	}
	perms, err := req.permissions(settings, env.Getenv)
	if err != nil {
		return nil, err
	}
	launch, err := LaunchSettings(settings, res.Provenance, env.Getenv)
	if err != nil {
		return nil, err
	}
	perms.Mode = launch.Mode
	dog, err := WatchdogSettings(settings, req.LoopFile != "" || req.TeamFile != "", FlagName)
	if err != nil {
		return nil, err
	}
	rateLimit, reportUsage, err := RateLimitSettings(settings, FlagName)
	if err == nil {
		err = RefusePhased(rateLimit, req.LoopFile != "" || req.TeamFile != "", FlagName)
	}
	if err != nil {
		return nil, err
	}
	spend, err := SpendSettings(settings, FlagName, env.Getenv)
	if err != nil {
		return nil, err
	}
	contextWarn, err := ContextWarnPct(settings, FlagName)
	if err != nil {
		return nil, err
	}
	if _, given := req.Settings["auto_compact_pct"]; given && settings.AutoCompactPct == 0 {
		return nil, errors.New("--auto-compact-pct 0 is out of range: 1 to 100 (omit it to never compact)")
	}
	autoCompact, err := AutoCompactPct(settings, req.LoopFile != "" || req.TeamFile != "", FlagName)
	if err != nil {
		return nil, err
	}
	if spend != nil && spend.Limits.Any() && (req.LoopFile != "" || req.TeamFile != "") {
		return nil, errors.New("spend limits are not available for a loop or team run: set them on a single run")
	}
	sb, err := req.sandboxFor(settings, dir, env)
	if err != nil {
		return nil, err
	}
	recoverSB, err := SandboxRecoverSettings(settings, sb, req.LoopFile != "" || req.TeamFile != "", FlagName)
	if err != nil {
		return nil, err
	}
	permBase := "" // cleaned with the sentinel (docs/run.md#lifecycle step 3)
	if req.SentinelFile != "" {
		permBase = perms.FileBase
		if permBase == "" {
			permBase = permission.DerivePermBase(req.SentinelFile)
		}
	}
	o := hostrt.Options{
		Dir: dir, DirExplicit: res.Provenance["dir"] != config.LayerDefault, Prompt: prompt, Images: images,
		Model: settings.Model, Agent: settings.Agent, Thinking: settings.Thinking,
		Resume: req.Resume, ServerURL: settings.ServerURL, RunID: req.RunID, Label: settings.Label,
		Timeout: settings.Timeout, ProgressTimeout: settings.ProgressTimeout, MaxRetries: settings.MaxRetries,
		AutoApprove: settings.AutoApprove, Questions: settings.Questions, SentinelPath: req.SentinelFile, PermBase: permBase,
		Logger: res.logger, Stderr: req.Stderr, PermissionMode: launch.Mode, LaunchContext: launch.Context,
		Watchdog: dog, Sandbox: sb, RateLimit: rateLimit, ReportUsage: reportUsage, ContextWarnPct: contextWarn,
		AutoCompactPct: autoCompact, SandboxRecover: recoverSB,
	}
	backend.Apply(&o)
	if o.Spend, o.Env, err = openOneshotSpend(spend, o.Env); err != nil {
		return nil, err
	}
	return &Prepared{Spec: Spec{Options: o, Permissions: perms}, req: req, backends: res.Backend}, nil
}

// applyRoster checks the roster flags (docs/loop.md#rosters) and, in direct mode
// (--roster-file with --roster-entry, no loop or team file), makes the
// entry the run's backend, agent and model, and its thinking the default
// under an explicit run-level one.
func (req *Request) applyRoster(s *config.Settings, prov config.Provenance) error {
	phased := req.LoopFile != "" || req.TeamFile != ""
	given := func(key string) bool { _, set := req.Settings[key]; return set }
	// Not direct: none, or the fallback roster of the config's phases
	// (Phased loads it).
	if direct, err := CheckRoster(req.RosterFile, req.RosterEntry, phased, given, FlagName); !direct {
		return err
	}
	r, err := req.roster(s.Dir)
	if err != nil {
		return err
	}
	e, err := r.Lookup(req.RosterEntry)
	if err != nil {
		return fmt.Errorf("--roster-entry: %w", err)
	}
	id := loop.Identity{Thinking: s.Thinking}.FromEntry(e)
	s.Backend, s.Agent, s.Model, s.Thinking = id.Backend, id.Agent, id.Model, id.Thinking
	entrySettings(e.LaunchKeys, s, prov, given)
	entrySandbox(e.SandboxKeys, s, &req.Sandbox, given)
	entryRateLimit(e.RateLimitKeys, s, given)
	entrySpend(e.SpendKeys, s, given)
	return nil
}

// roster loads --roster-file, resolved against the run's dir (docs/loop.md#rosters).
func (req Request) roster(dir string) (*loop.Roster, error) {
	path := req.RosterFile
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("--dir %q: %w", dir, err)
		}
		path = filepath.Join(abs, path)
	}
	r, err := loop.LoadRoster(path)
	if err != nil {
		return nil, fmt.Errorf("--roster-file %s: %w", req.RosterFile, err)
	}
	return r, nil
}

// prompt reads and checks the run's prompt.
func (req Request) prompt() (string, error) {
	switch req.PromptFile {
	case "":
		return req.Prompt, sdk.CheckPrompt("--prompt", req.Prompt)
	case "-":
		data, err := readPromptStdin(req.Stdin)
		if err != nil {
			return "", err
		}
		return string(data), sdk.CheckPrompt("--prompt-file -", string(data))
	}
	return ReadPromptFile("--prompt-file", req.PromptFile)
}

// readPromptStdin reads --prompt-file - to its end.
func readPromptStdin(stdin io.Reader) ([]byte, error) {
	if stdin == nil {
		return nil, errors.New("--prompt-file -: no stdin")
	}
	data, err := io.ReadAll(io.LimitReader(stdin, MaxStdinPrompt+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--prompt-file -: reading stdin: %w", err)
	case len(data) > MaxStdinPrompt:
		return nil, fmt.Errorf("--prompt-file -: the prompt on stdin is over %d MiB; put it in a file", MaxStdinPrompt>>20)
	}
	return data, nil
}

// permissions is the permission broker of the run: auto-approve, the
// effective file handler (an explicit --permission-handler file:<path>
// wins; else, with --sentinel-file and without auto-approve, the base
// derived from the sentinel unless --on-permission deny|fail), the claim
// timeout and --on-permission.
func (req Request) permissions(s config.Settings, getenv func(string) string) (permission.Options, error) {
	base, err := permission.FileBase(req.PermissionHandler, req.SentinelFile, s.AutoApprove)
	if err != nil {
		return permission.Options{}, err
	}
	unanswered := req.OnPermission
	if unanswered == "" {
		unanswered = permission.UnansweredWait
	}
	if err := permission.ValidUnanswered(unanswered); err != nil {
		return permission.Options{}, err
	}
	if req.PermissionHandler == "" && unanswered != permission.UnansweredWait {
		// --on-permission deny or fail, which the user gave, wins over the
		// file handler that --sentinel-file only implies (otherwise the
		// handler took every request and the policy never applied); an
		// explicit --permission-handler file:<base> keeps the handler first.
		base = ""
	}
	o := permission.Options{AutoApprove: s.AutoApprove, FileBase: base, ClaimTimeout: s.PermissionClaimTimeout, Unanswered: unanswered}
	if getenv == nil {
		return o, nil
	}
	if v := getenv(PermissionFileTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s=%q is not a positive Go duration", PermissionFileTimeoutEnv, v)
		}
		o.File.Timeout = d
	}
	if v := getenv(QuestionTimeoutEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("%s=%q is not a positive Go duration", QuestionTimeoutEnv, v)
		}
		o.QuestionTimeout = d
	}
	return o, nil
}

// Phased loads the run's --loop-file or --team-file (docs/loop.md), with
// --roster-file as its phases' fallback roster, and resolves every backend
// its phases name; nil when this is not a loop or team run. A config (or
// roster) that does not load is a *LoadError, whose run ends with
// STOP_REASON=error; a backend that does not resolve is a setup failure.
func (p *Prepared) Phased() (*Phased, error) {
	req, opts := p.req, p.Spec.Options
	if req.LoopFile == "" && req.TeamFile == "" {
		return nil, nil
	}
	files := PhasedFiles{LoopFile: req.LoopFile, TeamFile: req.TeamFile}
	if req.RosterFile != "" {
		kind := "loop"
		if req.TeamFile != "" {
			kind = "team"
		}
		r, err := req.roster(opts.Dir)
		if err != nil {
			return nil, &LoadError{Kind: kind, Err: err}
		}
		files.Roster = r
	}
	id := loop.Identity{Backend: opts.Backend, Agent: opts.Agent, Model: opts.Model, Thinking: opts.Thinking}
	return LoadPhased(files, id, p.backends)
}
