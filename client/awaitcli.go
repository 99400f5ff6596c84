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
