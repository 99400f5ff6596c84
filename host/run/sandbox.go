package run

import (
	"context"
	"errors"
	"os/exec"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// SandboxFlags are --sandbox-allow-write and --sandbox-deny-read, which
// repeat and so are not config keys.
type SandboxFlags struct {
	AllowWrite, DenyRead []string
}

// sandboxFor is the boundary a run asked for (docs/run.md#sandbox),
// checked against this machine: a profile the machine cannot enforce is
// refused here, before anything starts, naming what is missing — never
// run weaker, never retried without it. No --sandbox is exactly a run
// without one. A loop or team run is refused under a sandbox: its phases
// do not carry one yet, and none may run outside it.
func (req Request) sandboxFor(s config.Settings, dir string, env Env) (sdk.Sandbox, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	sb, err := sandbox.Resolve(sandbox.Request{
		Profile: s.Sandbox, Network: s.SandboxNetwork,
		AllowWrite: req.Sandbox.AllowWrite, DenyRead: req.Sandbox.DenyRead,
		Dir: dir, Home: getenv("HOME"),
	}, FlagName)
	if err != nil || !sb.Active() {
		return sb, err
	}
	if req.LoopFile != "" || req.TeamFile != "" {
		return sdk.Sandbox{}, errors.New("--sandbox is not supported with --loop-file or --team-file yet; run the phases without it or one at a time with avenor run --sandbox")
	}
	// The mechanism: bubblewrap, else Landlock, else refused here.
	return sandbox.Choose(context.Background(), sb, sandbox.Machine{LookPath: exec.LookPath, Getenv: getenv})
}
