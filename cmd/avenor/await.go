package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/client"
)

// Exit codes of avenor await (contract §1.10).
const (
	awaitDone       = 0
	awaitFailed     = 10
	awaitTimeout    = 11
	awaitKilled     = 12
	awaitPermission = 20
	awaitElapsed    = 124
)

// awaitPoll is how often await re-reads the status while a session.end
// settles into "ended" (or into the next attempt).
const awaitPoll = 50 * time.Millisecond

type awaitFlags struct {
	socket, until, format string
	timeout               time.Duration
	printOutput           bool
}

func newAwaitCmd(env Env) *cobra.Command {
	f := &awaitFlags{}
	cmd := &cobra.Command{
		Use:   "await <run-id|label> [flags]",
		Short: "Wait until a stable runtime needs attention or is done",
		Long: `Wait on a runtime of an avenor stable supervisor, named by its run id (exact) or its label
(the newest runtime with that label), until it needs attention (--until attention: a pending
permission request) or reaches a terminal state.

Without --socket, every supervisor socket in ~/.avenor/sockets/*.sock is searched.

Output (plain / --format json), one line per event:
  ATTENTION permission <runtime_id> <summary>   {"event":"attention","kind":"permission",…}
  TURN-DONE <runtime_id>                        {"event":"turn_done","runtime_id":…}
  END <done|failed|timeout|killed> <runtime_id> [reason]   {"event":"end","phase":…}

Exit codes: 0 done, 10 failed, 11 timeout (the runtime's), 12 killed, 20 pending permission,
124 await's own --timeout, 2 usage or connection errors.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return awaitUsage(env, "exactly one <run-id|label> is required")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.until != "attention" && f.until != "done":
				return awaitUsage(env, fmt.Sprintf("--until %q: attention or done", f.until))
			case f.format != "plain" && f.format != "json":
				return awaitUsage(env, fmt.Sprintf("--format %q: plain or json", f.format))
			case f.timeout < 0:
				return awaitUsage(env, "--timeout must not be negative")
			}
			return exitError{awaitMain(cmd.Context(), f, args[0], env)}
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return awaitUsage(env, err.Error()) })
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.socket, "socket", "", "the supervisor's control socket (default: search ~/.avenor/sockets/*.sock)")
	fl.StringVar(&f.until, "until", "attention", "attention (a permission gate or a terminal state) or done (terminal only)")
	fl.DurationVar(&f.timeout, "timeout", 0, "give up after this long, exit 124 (0: wait forever)")
	fl.BoolVar(&f.printOutput, "print-output", false, "after a terminal state print --- and the complete final_output")
	fl.StringVar(&f.format, "format", "plain", "plain or json")
	return cmd
}

// awaitUsage prints a usage error and exits 2 (decision 9).
func awaitUsage(env Env, msg string) error {
	fmt.Fprintf(env.Stderr, "avenor await: %s\n", msg)
	return exitError{exitUsage}
}

// errElapsed is await's own --timeout.
var errElapsed = errors.New("timeout elapsed")

func awaitMain(parent context.Context, f *awaitFlags, name string, env Env) int {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, f.timeout, errElapsed)
		defer cancel()
	}
	a := &awaiter{f: f, env: env}
	code, err := a.run(ctx, name)
	if err != nil {
		if errors.Is(context.Cause(ctx), errElapsed) {
			fmt.Fprintln(env.Stderr, "avenor await: timeout elapsed")
			return awaitElapsed
		}
		fmt.Fprintf(env.Stderr, "avenor await: %v\n", err)
		return exitUsage
	}
	return code
}

type awaiter struct {
	f   *awaitFlags
	env Env
	c   *client.Client
	id  string
}

// errLost is a supervisor that went away while await waited.
var errLost = errors.New("supervisor connection lost")

func (a *awaiter) run(ctx context.Context, name string) (int, error) {
	c, rt, err := a.find(ctx, name)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	a.c, a.id = c, rt.RuntimeID

	// status → history{limit:1} → subscribe{replay, after_seq: latest} →
	// a second status: nothing between the first look and the stream is lost.
	if code, done, err := a.check(ctx); done || err != nil {
		return code, err
	}
	h, err := c.History(ctx, client.HistoryOptions{RuntimeID: a.id, Limit: 1})
	if err != nil {
		return 0, a.lost(ctx, err)
	}
	sub, err := c.Subscribe(ctx, client.SubscribeOptions{RuntimeID: a.id, Replay: true, AfterSeq: h.LatestSeq})
	if err != nil {
		return 0, a.lost(ctx, err)
	}
	if code, done, err := a.check(ctx); done || err != nil {
		return code, err
	}
	// settling: a session.end was written; is the runtime ended, or going
	// on (a retry)? The status says so soon after. Without one, the status
	// is still read now and then, as a safety net.
	settling := len(h.Events) > 0 && h.Events[len(h.Events)-1].Name == "session.end"
	tick := time.NewTicker(awaitPoll)
	defer tick.Stop()
	quiet := 0
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return 0, a.lost(ctx, errLost)
			}
			switch ev.Name {
			case "permission.request":
				if a.f.until == "attention" {
					return a.attention(ev.Raw), nil
				}
			case "session.end":
				settling = true
				if code, done, err := a.check(ctx); done || err != nil {
					return code, err
				}
			case "avenor.retry", "session.start", "avenor.turn.start":
				if settling {
					settling = false
					a.line(fmt.Sprintf("TURN-DONE %s", a.id), map[string]any{"event": "turn_done", "runtime_id": a.id})
				}
			}
		case <-tick.C:
			if quiet++; settling || quiet%20 == 0 {
				if code, done, err := a.check(ctx); done || err != nil {
					return code, err
				}
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// lost maps a failed call: await's own timeout, or a lost supervisor.
func (a *awaiter) lost(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var re *client.RPCError
	if errors.As(err, &re) {
		return err
	}
	return errLost
}

// check reads the runtime's status: a terminal state ends await, and so
// does a pending permission with --until attention.
func (a *awaiter) check(ctx context.Context) (int, bool, error) {
	rt, err := a.c.Runtime(ctx, a.id)
	if err != nil {
		return 0, false, a.lost(ctx, err)
	}
	if rt.Status == "ended" {
		return a.end(ctx, rt), true, nil
	}
	if a.f.until == "attention" && rt.PendingPermission {
		return a.attention(rt.Permission), true, nil
	}
	return 0, false, nil
}

// attention prints the ATTENTION line of a permission request.
func (a *awaiter) attention(perm json.RawMessage) int {
	var p struct {
		Question  string `json:"question"`
		Tool      string `json:"tool"`
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(perm, &p)
	summary := p.Question
	if summary == "" {
		summary = p.Tool
	}
	if summary == "" {
		summary = p.RequestID
	}
	a.line(fmt.Sprintf("ATTENTION permission %s %s", a.id, summary),
		map[string]any{"event": "attention", "kind": "permission", "runtime_id": a.id, "summary": summary})
	return awaitPermission
}

// end prints the END line (and the output) of an ended runtime; its exit
// code maps to the phase.
func (a *awaiter) end(ctx context.Context, rt client.Runtime) int {
	code := 1
	if rt.ExitCode != nil {
		code = *rt.ExitCode
	}
	phase, exit := "failed", awaitFailed
	switch code {
	case 0:
		phase, exit = "done", awaitDone
	case 124:
		phase, exit = "timeout", awaitTimeout
	case 130:
		phase, exit = "killed", awaitKilled
	}
	plain := fmt.Sprintf("END %s %s", phase, a.id)
	js := map[string]any{"event": "end", "phase": phase, "runtime_id": a.id}
	if phase != "done" && rt.StopReason != "" {
		plain += " " + rt.StopReason
		js["reason"] = rt.StopReason
	}
	a.line(plain, js)
	if a.f.printOutput {
		out, err := a.c.Result(ctx, a.id)
		if err != nil {
			out = rt.FinalOutput
		}
		if a.f.format == "json" {
			a.line("", map[string]any{"final_output": out})
		} else {
			fmt.Fprintln(a.env.Stdout, "---")
			fmt.Fprintln(a.env.Stdout, out)
		}
	}
	return exit
}

func (a *awaiter) line(plain string, js map[string]any) {
	if a.f.format == "json" {
		b, _ := json.Marshal(js)
		fmt.Fprintln(a.env.Stdout, string(b))
		return
	}
	fmt.Fprintln(a.env.Stdout, plain)
}

// find dials the supervisor that holds the runtime: --socket, else every
// ~/.avenor/sockets/*.sock. An exact run_id (or runtime_id) wins; else the
// newest runtime with the label.
func (a *awaiter) find(ctx context.Context, name string) (*client.Client, client.Runtime, error) {
	socks := []string{a.f.socket}
	if a.f.socket == "" {
		home := a.env.Getenv("HOME")
		if home == "" {
			return nil, client.Runtime{}, errors.New("--socket is not given and $HOME is not set to search ~/.avenor/sockets")
		}
		found, _ := filepath.Glob(filepath.Join(home, ".avenor", "sockets", "*.sock"))
		if len(found) == 0 {
			return nil, client.Runtime{}, fmt.Errorf("no supervisor socket in %s; pass --socket", filepath.Join(home, ".avenor", "sockets"))
		}
		sort.Strings(found)
		socks = found
	}
	type cand struct {
		c    *client.Client
		rt   client.Runtime
		sock string
	}
	var labelled []cand
	var conns []*client.Client
	closeAll := func(keep *client.Client) {
		for _, c := range conns {
			if c != keep {
				c.Close()
			}
		}
	}
	var lastErr error
	for _, sock := range socks {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := client.Dial(dctx, sock)
		if err != nil {
			cancel()
			lastErr = fmt.Errorf("%s: %w", sock, err)
			continue
		}
		list, err := c.List(dctx)
		cancel()
		if err != nil {
			c.Close()
			lastErr = fmt.Errorf("%s: list: %w", sock, err)
			continue
		}
		conns = append(conns, c)
		for _, rt := range list {
			if rt.RunID == name || rt.RuntimeID == name {
				closeAll(c)
				return c, rt, nil
			}
			if rt.Label == name {
				labelled = append(labelled, cand{c, rt, sock})
			}
		}
	}
	if len(labelled) == 0 {
		closeAll(nil)
		if a.f.socket != "" && lastErr != nil {
			return nil, client.Runtime{}, lastErr
		}
		return nil, client.Runtime{}, fmt.Errorf("no runtime with run id or label %q", name)
	}
	win := labelled[0]
	for _, l := range labelled[1:] {
		if l.rt.StartedAt > win.rt.StartedAt || (l.rt.StartedAt == win.rt.StartedAt && l.rt.RuntimeID > win.rt.RuntimeID) {
			win = l
		}
	}
	for _, l := range labelled {
		if l.rt.RunID != win.rt.RunID {
			fmt.Fprintf(a.env.Stderr, "avenor await: label collision: losing run_id %s to winner run_id %s\n", l.rt.RunID, win.rt.RunID)
		}
	}
	closeAll(win.c)
	return win.c, win.rt, nil
}
