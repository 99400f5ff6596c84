package run

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/loop"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A spawn's sandbox (docs/control-protocol.md#spawn, docs/sandbox.md): the
// params sandbox, sandbox_network, sandbox_allow_write and
// sandbox_deny_read, read and checked as `avenor run` reads its --sandbox
// flags (sandboxFor), carried into the runtime's options and, through the
// params kept in its durable record, into its recovery. Like avenor run
// it fails closed: a boundary this machine or the backend cannot enforce
// refuses the spawn before anything starts.

// validateSandbox refuses a profile or network outside the vocabulary and
// more paths than the bounds allow: -32602.
func (p *SpawnParams) validateSandbox() error {
	if _, err := sdk.ParseSandboxProfile(p.Sandbox); err != nil {
		return control.InvalidParams("sandbox: " + err.Error())
	}
	if _, err := sdk.ParseSandboxNetwork(p.SandboxNetwork); err != nil {
		return control.InvalidParams("sandbox_network: " + err.Error())
	}
	return nil
}

// sandboxKeys adds the sandbox params that are config keys to out.
func (p SpawnParams) sandboxKeys(out map[string]any) {
	if p.Sandbox != "" {
		out["sandbox"] = p.Sandbox
	}
	if p.SandboxNetwork != "" {
		out["sandbox_network"] = p.SandboxNetwork
	}
	if p.SandboxRecover != nil {
		out["sandbox_recover"] = *p.SandboxRecover
	}
}

// resolveSandbox sets b.Sandbox to the boundary the spawn req asks for in
// dir, its working directory, checked against this machine. Input no
// spawn could take is -32602; a machine that cannot enforce it, or a loop
// or team (whose phases do not carry a sandbox yet), refuses the spawn.
func (b *SpawnBackend) resolveSandbox(req SpawnRequest, dir string) error {
	sb, err := sandbox.Resolve(sandbox.Request{
		Profile: b.Settings.Sandbox, Network: b.Settings.SandboxNetwork,
		AllowWrite: req.Sandbox.AllowWrite, DenyRead: req.Sandbox.DenyRead, Dir: dir, Home: b.env("HOME"),
	}, paramKey)
	if err != nil {
		return control.InvalidParams(err.Error())
	}
	b.Sandbox = sdk.Sandbox{}
	if !sb.Active() {
		return nil
	}
	if req.LoopFile != "" || req.TeamFile != "" {
		return errors.New("sandbox is not supported with loop_file or team_file yet; spawn the phases without it, or one at a time with sandbox")
	}
	// The mechanism, as avenor run chooses it: bubblewrap, else
	// Landlock, else refused here.
	if sb, err = sandbox.Choose(context.Background(), sb, b.machine()); err != nil {
		return err
	}
	b.Sandbox = sb
	return nil
}

// env is the supervisor's environment variable key, "" when unknown.
func (b *SpawnBackend) env(key string) string {
	if b.getenv == nil {
		return ""
	}
	return b.getenv(key)
}

// machine is what sandbox.Choose looks at for a spawn.
func (b *SpawnBackend) machine() sandbox.Machine {
	return sandbox.Machine{LookPath: exec.LookPath, Getenv: b.env}
}

// checkSandbox refuses, before anything of the spawn runs, a sandbox its
// backend does not declare (capability sandbox): the backend's plugin is
// started to describe itself and stopped again. No sandbox starts
// nothing.
func (sp Spawned) checkSandbox(ctx context.Context) error {
	sb := sp.Backend.Sandbox
	if !sb.Active() {
		return nil
	}
	info, err := describe(ctx, sp.Backend.Backend)
	if err != nil {
		return err
	}
	if err := sdk.CheckSandbox(info, sb); err != nil {
		return errors.New(strings.ReplaceAll(err.Error(), "--sandbox", "sandbox") + "; nothing was started")
	}
	return nil
}

// SameSandbox reports whether a and b are the same boundary.
func SameSandbox(a, b sdk.Sandbox) bool {
	if !a.Active() && !b.Active() {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// entrySandbox gives a direct-mode run its roster entry's sandbox where
// the run's own (flags or params, given) has none: sandbox and
// sandbox_network into s, the path lists into flags when those are empty.
func entrySandbox(k loop.SandboxKeys, s *config.Settings, flags *SandboxFlags, given func(string) bool) {
	if k.Sandbox != "" && !given("sandbox") {
		s.Sandbox = k.Sandbox
	}
	if k.SandboxNetwork != "" && !given("sandbox_network") {
		s.SandboxNetwork = k.SandboxNetwork
	}
	if len(flags.AllowWrite) == 0 {
		flags.AllowWrite = k.SandboxAllowWrite
	}
	if len(flags.DenyRead) == 0 {
		flags.DenyRead = k.SandboxDenyRead
	}
}

// entrySandboxKeys gives a direct-mode spawn's settings (set, host/config
// keys) and req its roster entry's sandbox, under the spawn's own params.
func entrySandboxKeys(k loop.SandboxKeys, set map[string]any, req *SpawnRequest) {
	for key, v := range map[string]string{"sandbox": k.Sandbox, "sandbox_network": k.SandboxNetwork} {
		if _, given := set[key]; !given && v != "" {
			set[key] = v
		}
	}
	var s config.Settings
	entrySandbox(loop.SandboxKeys{SandboxAllowWrite: k.SandboxAllowWrite, SandboxDenyRead: k.SandboxDenyRead}, &s, &req.Sandbox, func(string) bool { return true })
}

// restoreSandbox gives b the boundary the record's runtime ran inside,
// its mechanism chosen on this machine again; a record of none resolves req's
// (none, unless the config asks for one now).
func (r Record) restoreSandbox(b *SpawnBackend, req SpawnRequest) error {
	if r.Sandbox == nil {
		return b.resolveSandbox(req, r.Dir)
	}
	// The same boundary, with the mechanism this machine has now.
	sb, err := sandbox.Choose(context.Background(), *r.Sandbox, b.machine())
	if err != nil {
		return err
	}
	b.Sandbox = sb
	return nil
}
