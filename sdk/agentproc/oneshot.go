package agentproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of a one-shot status command (RunStatus): `opencode models`,
// `codex login status` and their kind, run outside any session.
const (
	// MaxStatusOutput caps what is kept of each of a status command's
	// stdout and stderr; the rest is read and dropped, so a chatty CLI
	// cannot fill memory or block on a full pipe.
	MaxStatusOutput = 1 << 20
	// StatusTimeout bounds one status command when ctx allows longer.
	StatusTimeout = 10 * time.Second
)

// ErrStatusTimeout is wrapped by RunStatus's error when the command did
// not finish within its bound.
var ErrStatusTimeout = errors.New("did not finish in time")

// StatusResult is what a status command printed and how it ended.
type StatusResult struct {
	Stdout, Stderr []byte
	// Truncated: stdout or stderr was longer than MaxStatusOutput.
	Truncated bool
	// ExitCode is the command's exit status (-1 when it did not exit).
	ExitCode int
}

// RunStatus runs binary with args and env, no stdin, within ctx and at most
// StatusTimeout, in a process group of its own that is killed whole when
// the bound passes (a node launcher's children too). A non-zero exit is not
// an error: the caller reads ExitCode. The error says the command was not
// found, could not start, or ran out of time (ErrStatusTimeout).
func RunStatus(ctx context.Context, binary string, args []string, env []string) (StatusResult, error) {
	res := StatusResult{ExitCode: -1}
	path, err := exec.LookPath(binary)
	if err != nil {
		return res, runtime.Errorf(runtime.FaultRuntime, "the runtime CLI %q was not found %s", binary, searched(binary))
	}
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stdout, stderr := &capBuffer{max: MaxStatusOutput}, &capBuffer{max: MaxStatusOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	if cmd.Process != nil {
		// Whatever it left behind in its group goes with it.
		_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.cut || stderr.cut
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("`%s %s` %w", binary, joinArgs(args), ErrStatusTimeout)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return res, fmt.Errorf("`%s %s`: %w", binary, joinArgs(args), err)
	}
	return res, nil
}

func joinArgs(args []string) string {
	var b bytes.Buffer
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

// capBuffer keeps the first max bytes written to it and drops the rest.
// The buffer is a field, not embedded, so that io.Copy cannot go around
// Write through bytes.Buffer's ReadFrom.
type capBuffer struct {
	buf bytes.Buffer
	max int
	cut bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room < len(p) {
		c.cut = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capBuffer) Bytes() []byte { return c.buf.Bytes() }

// ansiEscape matches a terminal escape sequence: CSI (ESC [ ... final
// byte) and OSC (ESC ] ... BEL or ESC \), and any other two-byte escape.
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// StripANSI removes terminal escape sequences from a status command's
// output, which some CLIs colour even when it is not a terminal.
func StripANSI(s string) string { return ansiEscape.ReplaceAllString(s, "") }
