package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// CheckTimeout bounds the trial bwrap run of Check.
const CheckTimeout = 5 * time.Second

// Unusable is one mechanism this machine cannot enforce a sandbox with,
// and why.
type Unusable struct {
	Mechanism string
	Reason    string
}

// MissingError says this machine cannot enforce a sandbox: each mechanism
// tried, what it lacks, and how to get one.
type MissingError struct {
	Tried []Unusable
}

func (e *MissingError) Error() string {
	parts := make([]string, len(e.Tried))
	hints := make([]string, 0, 2)
	for i, u := range e.Tried {
		parts[i] = fmt.Sprintf("%s (%s)", u.Mechanism, u.Reason)
		switch u.Mechanism {
		case sdk.MechanismBubblewrap:
			hints = append(hints, agentproc.BwrapInstallHint)
		case sdk.MechanismLandlock:
			hints = append(hints, "run on a kernel with Landlock")
		}
	}
	return fmt.Sprintf("the sandbox cannot be enforced on this machine: %s; %s; nothing was started", strings.Join(parts, ", "), strings.Join(hints, " or "))
}

// Check says whether this machine can enforce sb with bubblewrap: bwrap
// is on PATH (lookPath) and a trial `bwrap --unshare-pid --ro-bind / /
// true` succeeds within CheckTimeout (user and process namespaces, mount
// permission). No sandbox needs nothing. The error is a *MissingError.
func Check(ctx context.Context, sb sdk.Sandbox, lookPath func(string) (string, error)) error {
	if !sb.Active() {
		return nil
	}
	if sb.Mechanism != sdk.MechanismBubblewrap {
		return &MissingError{Tried: []Unusable{{Mechanism: sb.Mechanism, Reason: "not a mechanism this avenor knows"}}}
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	path, err := lookPath(agentproc.BwrapBinary)
	if err != nil {
		return &MissingError{Tried: []Unusable{{Mechanism: sdk.MechanismBubblewrap, Reason: agentproc.BwrapBinary + " not found in PATH"}}}
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--unshare-pid", "--ro-bind", "/", "/", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		reason := strings.TrimSpace(stderr.String())
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = fmt.Sprintf("a trial run did not end within %s", CheckTimeout)
		}
		if reason == "" {
			reason = err.Error()
		}
		if len(reason) > 200 {
			reason = reason[:200]
		}
		return &MissingError{Tried: []Unusable{{Mechanism: sdk.MechanismBubblewrap, Reason: path + " cannot run here: " + reason}}}
	}
	return nil
}
