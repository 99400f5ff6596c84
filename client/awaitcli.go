package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// AwaitSockets are the supervisors `avenor await` searches
// (docs/cli.md#avenor-await): the socket given (given: --socket was on the
// command line, maybe empty), else the one of AVENOR_SOCKET, else every
// ~/.avenor/sockets/*.sock, the default socket first, the others sorted.
func AwaitSockets(socket string, given bool, getenv func(string) string) ([]string, error) {
	if given {
		if socket == "" {
			return nil, errors.New("--socket is required")
		}
		return []string{socket}, nil
	}
	// docs/cli.md#avenor-control: AVENOR_SOCKET names the one socket.
	if p := getenv(SocketEnv); p != "" {
		return []string{p}, nil
	}
	home := getenv("HOME")
	if home == "" {
		return nil, errors.New("--socket is not given and $HOME is not set to search ~/.avenor/sockets")
	}
	found, _ := filepath.Glob(filepath.Join(SocketDir(home), "*.sock"))
	if len(found) == 0 {
		return nil, fmt.Errorf("no supervisor socket in %s; pass --socket", SocketDir(home))
	}
	// The default socket first: `avenor stable` without --control-socket
	// listens there.
	sort.Strings(found)
	def := DefaultSocketPath(home)
	if i := slices.Index(found, def); i > 0 {
		found = append(append([]string{def}, found[:i]...), found[i+1:]...)
	}
	return found, nil
}

// AwaitPrinter is `avenor await`'s output: one line per event, plain
// (TURN-DONE id, ATTENTION permission id summary, END phase id [reason])
// or one JSON object a line.
type AwaitPrinter struct {
	Out  io.Writer
	JSON bool
	// FinalOutput prints the complete final_output after the END line:
	// "---" and the text, or {"final_output": …}.
	FinalOutput bool
}

func (p AwaitPrinter) line(plain string, js map[string]any) {
	if p.JSON {
		b, _ := json.Marshal(js)
		fmt.Fprintln(p.Out, string(b))
		return
	}
	fmt.Fprintln(p.Out, plain)
}

// Await finds the runtime name among sockets (FindRuntime; warn is told of
// label collisions), waits on it until opts.Until and prints the turns that
// ended on the way and what ended the wait. A single socket that could not
// be asked is its own error rather than NoRuntimeError.
func (p AwaitPrinter) Await(ctx context.Context, sockets []string, name string, until string, warn func(string)) (AwaitOutcome, error) {
	c, rt, err := FindRuntime(ctx, sockets, name, warn)
	var nr *NoRuntimeError
	if errors.As(err, &nr) && len(sockets) == 1 && nr.LastErr != nil {
		return AwaitOutcome{}, nr.LastErr
	}
	if err != nil {
		return AwaitOutcome{}, err
	}
	defer c.Close()
	out, err := c.Await(ctx, rt.RuntimeID, AwaitOptions{Until: until, FinalOutput: p.FinalOutput,
		OnTurnDone: func(id string) {
			p.line(fmt.Sprintf("TURN-DONE %s", id), map[string]any{"event": "turn_done", "runtime_id": id})
		}})
	if err != nil {
		return out, err
	}
	if out.Attention != "" {
		p.line(fmt.Sprintf("ATTENTION permission %s %s", out.RuntimeID, out.Summary),
			map[string]any{"event": "attention", "kind": "permission", "runtime_id": out.RuntimeID, "summary": out.Summary})
		return out, nil
	}
	plain := fmt.Sprintf("END %s %s", out.Phase, out.RuntimeID)
	js := map[string]any{"event": "end", "phase": out.Phase, "runtime_id": out.RuntimeID}
	if out.Reason != "" {
		plain += " " + out.Reason.String()
		js["reason"] = out.Reason.String()
	}
	p.line(plain, js)
	if p.FinalOutput {
		if p.JSON {
			p.line("", map[string]any{"final_output": out.FinalOutput})
		} else {
			fmt.Fprintln(p.Out, "---")
			fmt.Fprintln(p.Out, out.FinalOutput)
		}
	}
	return out, nil
}

// Exit codes of `avenor await` (docs/cli.md#avenor-await).
const (
	AwaitExitDone       = 0
	AwaitExitFailed     = 10
	AwaitExitTimeout    = 11
	AwaitExitKilled     = 12
	AwaitExitPermission = 20
	AwaitExitUsage      = 2
	AwaitExitElapsed    = 124
)

// AwaitCommand is `avenor await` once its command line is parsed.
type AwaitCommand struct {
	// Socket is --socket; SocketGiven says it was on the command line,
	// maybe empty (AwaitSockets).
	Socket      string
	SocketGiven bool
	// Until is attention or done; Format plain or json.
	Until, Format string
	// Timeout gives up after this long (0: never), exit AwaitExitElapsed.
	Timeout time.Duration
	// PrintOutput prints the final output after a terminal state.
	PrintOutput bool
}

// Check refuses the flag values await cannot take.
func (c AwaitCommand) Check() error {
	switch {
	case c.Until != "attention" && c.Until != "done":
		return fmt.Errorf("--until %q: attention or done", c.Until)
	case c.Format != "plain" && c.Format != "json":
		return fmt.Errorf("--format %q: plain or json", c.Format)
	case c.Timeout < 0:
		return errors.New("--timeout must not be negative")
	}
	return nil
}

// errElapsed is await's own --timeout.
var errElapsed = errors.New("timeout elapsed")

// Run waits on the runtime name as AwaitPrinter does, printing to stdout,
// and returns await's exit code; what went wrong is said on stderr.
func (c AwaitCommand) Run(ctx context.Context, name string, getenv func(string) string, stdout, stderr io.Writer) int {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.Timeout, errElapsed)
		defer cancel()
	}
	say := func(msg string) { fmt.Fprintf(stderr, "avenor await: %s\n", msg) }
	out, err := c.await(ctx, name, getenv, stdout, say)
	switch {
	case err != nil && errors.Is(context.Cause(ctx), errElapsed):
		say("timeout elapsed")
		return AwaitExitElapsed
	case err != nil:
		say(err.Error())
		return AwaitExitUsage
	case out.Attention != "":
		return AwaitExitPermission
	case out.Phase == PhaseDone:
		return AwaitExitDone
	case out.Phase == PhaseTimeout:
		return AwaitExitTimeout
	case out.Phase == PhaseKilled:
		return AwaitExitKilled
	}
	return AwaitExitFailed
}

func (c AwaitCommand) await(ctx context.Context, name string, getenv func(string) string, stdout io.Writer, warn func(string)) (AwaitOutcome, error) {
	socks, err := AwaitSockets(c.Socket, c.SocketGiven, getenv)
	if err != nil {
		return AwaitOutcome{}, err
	}
	p := AwaitPrinter{Out: stdout, JSON: c.Format == "json", FinalOutput: c.PrintOutput}
	return p.Await(ctx, socks, name, c.Until, warn)
}
