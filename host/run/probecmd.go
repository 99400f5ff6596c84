package run

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/internal/regularfile"
)

// ProbeCommand is `avenor probe` once its flags are parsed: one run of
// Prompt through ProbeBackend in Dir, its NDJSON transcript written to Out.
type ProbeCommand struct {
	Out, Dir, Prompt string
	Timeout          time.Duration
}

// Run runs the probe with env (its Logger is avenor's) and returns its
// exit code; a probe that cannot start is said on stderr, exit 1.
func (c ProbeCommand) Run(env Env, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "avenor probe: %v\n", err)
		return sentinel.ExitFailure
	}
	absDir, err := filepath.Abs(c.Dir)
	if err != nil {
		return fail(fmt.Errorf("--dir %q: %w", c.Dir, err))
	}
	if st, err := os.Stat(absDir); err != nil || !st.IsDir() {
		return fail(fmt.Errorf("--dir %q is not a directory", c.Dir))
	}
	probe, err := NewProbe(env, absDir)
	if err != nil {
		return fail(err)
	}
	// The transcript is an event log a harness reads: refused, as
	// --on-event's is, when it is a pipe, a device or a planted symlink.
	file, err := regularfile.CreateLog(c.Out)
	if err != nil {
		return fail(fmt.Errorf("--out: %w", err))
	}
	defer file.Close()

	ctx, stop := Interruptible()
	defer stop()
	res := probe.Run(ctx, ProbeSpec{Prompt: c.Prompt, RunID: NewRunID(), Timeout: c.Timeout,
		Events: file, Logger: env.Logger, Stderr: stderr})
	fmt.Fprintf(stdout, "probe: %s ended with %s (exit %d); transcript in %s\n", ProbeBackend, res.StopReason, res.ExitCode, c.Out)
	return res.ExitCode
}
