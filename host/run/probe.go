package run

import (
	"context"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
)

// ProbeBackend is the only backend `avenor probe` drives (docs/cli.md#avenor-probe).
const ProbeBackend = "opencode-acp"

// ProbePrompt is the built-in prompt of `avenor probe`: it asks for a tool
// that needs permission, which the probe rejects, so one run shows the
// whole exchange (tool call, permission request and answer, turn end) and
// changes nothing on disk.
const ProbePrompt = "Use the shell tool to run `echo avenor-probe > avenor-probe.txt`. " +
	"If the tool is not allowed, say so in one short sentence and stop."

// Probe is an `avenor probe` whose backend resolved: ProbeBackend as a
// run in its directory would find it (config, family mapping, pins).
type Probe struct {
	dir      string
	resolved *Resolved
	found    plugins.Found
}

// NewProbe resolves ProbeBackend for a probe in dir (absolute). The caller
// opens the transcript once it did, so a backend that does not resolve
// leaves no file behind.
func NewProbe(env Env, dir string) (*Probe, error) {
	resolved, err := Resolve(env, dir, nil)
	if err != nil {
		return nil, err
	}
	found, err := resolved.Find(ProbeBackend)
	if err != nil {
		return nil, err
	}
	return &Probe{dir: dir, resolved: resolved, found: found}, nil
}

// ProbeSpec is what one probe run takes.
type ProbeSpec struct {
	// Prompt is the probe's prompt (ProbePrompt when empty).
	Prompt string
	// RunID stamps the events; Timeout bounds the run (0: none).
	RunID   string
	Timeout time.Duration
	// Events is the transcript.
	Events io.Writer
	Logger hclog.Logger
	Stderr io.Writer
}

// Run runs the probe to its end, every permission request rejected
// (permission.RejectFirst).
func (p *Probe) Run(ctx context.Context, spec ProbeSpec) hostrt.Result {
	if spec.Prompt == "" {
		spec.Prompt = ProbePrompt
	}
	opts := hostrt.Options{
		Dir: p.dir, Prompt: spec.Prompt, RunID: spec.RunID, Timeout: spec.Timeout,
		Events: spec.Events, Logger: spec.Logger, Stderr: spec.Stderr,
	}
	p.resolved.Configure(ProbeBackend, p.found).Apply(&opts)
	return hostrt.New(opts, func(string) hostrt.Permissions { return permission.RejectFirst{} }).Run(ctx)
}
