package stable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	"github.com/avenor-go/avenor/host/plugins"
	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/host/sentinel"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Recovering the runtimes of a supervisor that died on this socket
// (state.go). Each runtime comes back in the table under its id, with its
// log continued from the last seq it holds: a parked one as it was (a
// follow-up resumes its session in a fresh plugin, cross_process); one
// that was running is ended — its lingering plugin is stopped, its log gets
// an avenor.error and a session.end{stop_reason:"error"}, its sentinel
// FAILED — since its turn cannot be taken over. Nothing is started twice:
// a plugin is stopped, never launched again, by recovery.

// Bounds of recovery.
const (
	// recoverStopWait bounds how long a lingering plugin of a runtime that
	// cannot be taken over gets to stop its runtime (SIGHUP) before it is
	// killed.
	recoverStopWait = 5 * time.Second
	// maxLogTail bounds how far back the last line of an event log is
	// looked for.
	maxLogTail = 64 << 20
)

// openState opens the durable state (Config.StateDir) and recovers what a
// dead predecessor left there. A state file it cannot trust is refused:
// the supervisor does not start, and nothing is stopped or started.
func (s *Supervisor) openState() error {
	if s.cfg.StateDir == "" {
		return nil
	}
	st, err := openStateStore(s.cfg.StateDir)
	if err != nil {
		return err
	}
	prev, ok, err := st.load()
	if err != nil {
		return err
	}
	s.store = st
	if ok {
		s.recoverState(prev)
	}
	return nil
}

// recoverState takes over the runtimes of prev.
func (s *Supervisor) recoverState(prev supervisorState) {
	s.log.Info("recovering the runtimes of a supervisor that died on this socket", "pid", prev.PID, "runtimes", len(prev.Runtimes))
	for _, r := range prev.Runtimes {
		rt, err := s.recoverRuntime(r)
		if err != nil {
			fmt.Fprintf(s.cfg.Stderr, "avenor stable: runtime %s of the previous supervisor could not be recovered: %v\n", r.ID, err)
			continue
		}
		s.mu.Lock()
		s.runtimes[rt.id] = rt
		if rt.n > s.nextN {
			s.nextN = rt.n
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if prev.NextN > s.nextN {
		s.nextN = prev.NextN
	}
	s.mu.Unlock()
}

// recoverRuntime rebuilds one runtime, parked or ended.
func (s *Supervisor) recoverRuntime(r runtimeState) (*runtime, error) {
	lastSeq, lastType, err := logTail(r.OnEvent)
	if err != nil {
		return nil, err
	}
	sp := spec{
		backend: r.Backend, label: r.Label, dir: r.Dir, runID: r.RunID, onEvent: r.OnEvent, sentinel: r.Sentinel,
		permBase: r.PermBase, model: r.Spawn.Model, agent: r.Spawn.Agent, agentProfile: r.Spawn.AgentProfile,
		thinking: r.Spawn.Thinking, parentID: r.Spawn.ParentID, parentRunID: r.Spawn.ParentRunID, dirExplicit: r.Spawn.Dir != "",
	}
	var dead string
	if r.Spawn.LoopFile != "" || r.Spawn.TeamFile != "" {
		dead = "ran a loop or team that the supervisor's restart ended"
	} else if b, err := s.cfg.Resolve(r.Dir, r.Spawn.configKeys()); err != nil {
		dead = fmt.Sprintf("cannot be resumed after the supervisor's restart: %v", err)
	} else {
		set := b.Settings
		sp.model, sp.agent, sp.thinking, sp.serverURL = set.Model, set.Agent, set.Thinking, set.ServerURL
		sp.autoApprove, sp.timeout, sp.progressTimeout, sp.maxRetries = set.AutoApprove, set.Timeout, set.ProgressTimeout, set.MaxRetries
		sp.pluginOptions, sp.stateDir, sp.launch = b.PluginOptions, b.StateDir, b.Launch
		sp.env = make(map[string]string, len(b.Env)+1)
		for k, v := range b.Env {
			sp.env[k] = v
		}
		if path := s.tree.Path(); path != "" {
			sp.env[EnvTreeBudget] = path
		}
	}
	fileBase, err := permission.FileBase(r.Spawn.PermissionHandler, sp.sentinel, sp.autoApprove)
	if err != nil {
		fileBase = ""
	}
	sp.permFile = fileBase != ""
	rt := &runtime{
		s: s, id: r.ID, n: r.N, spec: sp, params: r.Spawn, started: r.Started, ready: make(chan struct{}),
		state: stateParked, sessionID: r.SessionID, dead: dead, parkedAt: s.cfg.Now().UnixMilli(),
	}
	rt.markReady()
	rt.run = hostrun.Restore(s.runSpec(rt, fileBase), lastSeq, hostrun.Deps{Control: control.Resolver{Server: s.srv}})
	rt.debug = newDebugTarget(rt)

	if r.AcceptedAt > 0 && lastSeq <= r.AcceptedAt {
		// A follow-up prompt was answered accepted, and its run wrote
		// nothing before the supervisor died: the log's session.end is the
		// turn before it. The prompt did not run; its turn ends in error,
		// so the harness waiting on it hears so, and the runtime is ended
		// (docs/stable.md#runtimes: only a turn that ended well parks). A plugin that
		// kept the session is stopped rather than trusted with a turn in
		// an unknown state.
		msg := fmt.Sprintf("runtime %s: the supervisor died after accepting a prompt and before its turn started; the prompt did not run (send it again in a new runtime: spawn with session_id %s)", r.ID, r.SessionID)
		if err := s.endTurnInError(rt, r, msg); err != nil {
			return nil, err
		}
		if r.Plugin != nil {
			stopLingering(r.Plugin.PID)
		}
		return rt, nil
	}
	// A log that ends with a session.end holds a whole turn, whatever the
	// state file says: the supervisor may have died between writing that
	// line and the sentinel, or before it saved the runtime as parked.
	turnEnded := lastType == string(event.TypeSessionEnd)
	if turnEnded {
		s.settleEndedTurn(rt, r)
	}
	// A turn that ended badly ended its runtime (docs/stable.md#runtimes): its plugin
	// is not taken over to keep a session nobody can prompt.
	if p := r.Plugin; p != nil && r.SessionID != "" && rt.dead == "" && rt.endedLocked() == "" && isAvenorPlugin(p.PID) {
		if s.reattachRuntime(rt, r, lastType) {
			return rt, nil
		}
	}
	if r.State != persistRunning || turnEnded {
		// Parked or ended: its log and sentinel are whole. A plugin that
		// still lingers with the session could not be taken over: it is
		// stopped, and with it its runtime; the session resumes by id.
		if r.Plugin != nil {
			stopLingering(r.Plugin.PID)
		}
		if rt.result == nil {
			if ec, stop, ok := readSentinel(r.Sentinel); ok {
				rt.result = &hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID}
			}
		}
		if r.State == persistEnded && rt.dead == "" && rt.endedLocked() == "" {
			rt.dead = "ended before the supervisor's restart"
		}
		return rt, nil
	}
	if r.Plugin != nil {
		stopLingering(r.Plugin.PID)
	}
	msg := fmt.Sprintf("runtime %s: the supervisor died during its turn and the one that took over its socket could not re-attach to its plugin; the turn ended with stop reason error",
		r.ID)
	rt.dead = "lost its turn when the supervisor died"
	if len(r.Pending) > 0 {
		msg += fmt.Sprintf("; permission request %s was pending and is moot", r.Pending[len(r.Pending)-1].RequestID)
	}
	if err := s.endTurnInError(rt, r, msg); err != nil {
		return nil, err
	}
	return rt, nil
}

// endTurnInError ends the runtime's turn in its log and sentinel for the
// dead supervisor: an avenor.error saying msg (also on stderr), a
// session.end{stop_reason:"error"}, the sentinel FAILED.
func (s *Supervisor) endTurnInError(rt *runtime, r runtimeState, msg string) error {
	fmt.Fprintf(s.cfg.Stderr, "avenor stable: %s\n", msg)
	if err := rt.run.EndTurn(r.SessionID, msg); err != nil {
		return err
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitFailure, SessionID: r.SessionID, StopReason: sdk.StopError, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "avenor: writing sentinel: %v\n", err)
	}
	rt.result = &hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: r.SessionID}
	return nil
}

// settleEndedTurn gives a runtime whose log ends with a turn's session.end
// its result, read from its sentinel, or, when the supervisor died before
// writing it, from that session.end: the sentinel is written then, so a
// harness waiting on it does not wait for ever. The sentinel is always the
// last thing of a turn; the log's line says the turn is whole.
func (s *Supervisor) settleEndedTurn(rt *runtime, r runtimeState) {
	if ec, stop, ok := readSentinel(r.Sentinel); ok {
		rt.result = &hostrt.Result{ExitCode: ec, StopReason: stop, SessionID: r.SessionID}
		return
	}
	sid, stop, err := sentinel.ReadLastSessionEnd(r.OnEvent)
	if err != nil {
		s.log.Warn("reading the last session.end of a runtime's log", "runtime_id", r.ID, "error", err)
		return
	}
	if sid == "" {
		sid = r.SessionID
	}
	rec := sentinel.Record{ExitCode: sentinel.ExitCode(stop), SessionID: sid, StopReason: stop, RunID: r.RunID}
	if err := sentinel.Write(r.Sentinel, rec); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "avenor: writing sentinel: %v\n", err)
		return
	}
	s.log.Info("wrote the sentinel of a turn that ended just before the supervisor died", "runtime_id", r.ID, "stop_reason", stop)
	rt.result = &hostrt.Result{ExitCode: rec.ExitCode, StopReason: rec.StopReason, SessionID: sid}
}

// reattachWait bounds connecting to a lingering plugin and taking its
// session over.
const reattachWait = 10 * time.Second

// reattachRuntime takes the runtime's session over from the plugin that
// kept it: a turn still open in the log goes on in a run that awaits it
// (its permission requests asked again, its end written as usual); a
// parked session is held again. False: the plugin could not be reached or
// would not hand the session over, and recovery ends the runtime.
func (s *Supervisor) reattachRuntime(rt *runtime, r runtimeState, lastType string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), reattachWait)
	defer cancel()
	p := r.Plugin
	l, err := plugins.Reattach(ctx, plugin.ReattachInfo{Network: p.Network, Address: p.Address, PID: p.PID, Protocol: p.Protocol, ProtocolVersion: p.ProtocolVersion},
		r.Backend, s.log.Named(r.ID))
	if err != nil {
		s.log.Warn("re-attaching to a runtime's plugin", "runtime_id", r.ID, "pid", p.PID, "error", err)
		return false
	}
	sid := r.SessionID
	tail, err := logTailEvents(r.OnEvent)
	if err != nil {
		s.log.Warn("reading a runtime's event log", "runtime_id", r.ID, "error", err)
	}
	fn := func(ctx context.Context, l *plugins.Launched, h sdk.Host) (sdk.Session, plugin.Reattached, error) {
		ra, ok := l.Backend.(plugin.Reattacher)
		if !ok {
			return nil, plugin.Reattached{}, fmt.Errorf("backend %s cannot hand sessions over", r.Backend)
		}
		return ra.Reattach(ctx, sid, h, writtenIn(tail))
	}
	rt.plugin, rt.scope = l.Client.Info().Name, l.Backend.Info().ResumeScope
	if lastType != string(event.TypeSessionEnd) {
		// Mid-turn (or before its first turn): a run continues it.
		s.mu.Lock()
		s.active++ // it runs already: admitted whatever the limits say now
		_ = s.tree.reserve(rt.id)
		rt.mu.Lock()
		rt.plan = &hostrun.Adopt{Plugin: l, Reattach: fn, Events: lastTurnEvents(r.OnEvent)}
		rt.startRunLocked(r.Spawn.Prompt, sid, nil)
		rt.mu.Unlock()
		s.mu.Unlock()
		s.answerRecorded(rt, r.Pending)
		return true
	}
	held, ra, err := hostrt.ReattachHeld(ctx, l, fn, s.log.Named(r.ID))
	if err != nil {
		s.log.Warn("taking a parked runtime's session over", "runtime_id", r.ID, "error", err)
		l.Client.Kill()
		return false
	}
	// Its log ends with its turn's session.end, and stays so: a harness
	// reads the last line as the runtime's state. Only a turn taken over
	// gets avenor.supervisor.reattached.
	s.log.Info("re-attached a parked runtime's plugin", "runtime_id", r.ID, "buffered", ra.BufferedEvents, "gap_ms", ra.Gap.Milliseconds())
	s.mu.Lock()
	rt.mu.Lock()
	rt.held, rt.launched = held, l
	rt.watchHeldLocked(held)
	evict := s.keepLocked(rt, rt.scope)
	rt.mu.Unlock()
	var toClose []*hostrt.HeldSession
	for _, v := range evict {
		if h := v.evictHeld(s.cfg.MaxKeptPlugins); h != nil {
			toClose = append(toClose, h)
		}
	}
	s.mu.Unlock()
	for _, h := range toClose {
		h.Close()
	}
	return true
}

// answerRecorded answers again, with the decision the dead supervisor
// recorded, a permission request it decided but whose decision may not
// have reached the plugin: the plugin asks it again after the take-over,
// and its runtime gets the decision once (the plugin takes one per request
// id).
func (s *Supervisor) answerRecorded(rt *runtime, perms []permissionState) {
	for _, p := range perms {
		if p.Delivery != deliveryDecided || len(p.Decision) == 0 {
			continue
		}
		var d struct {
			OptionID string `json:"option_id"`
			Kind     string `json:"kind"`
			Source   string `json:"source"`
		}
		if json.Unmarshal(p.Decision, &d) != nil || d.OptionID == "" {
			continue
		}
		id := p.RequestID
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			deadline := time.Now().Add(reattachWait)
			for time.Now().Before(deadline) {
				for _, req := range rt.run.Broker().Pending() {
					if req.ID == id {
						src := d.Source
						if !permission.ValidAnswerSource(src) {
							src = ""
						}
						if err := rt.run.Broker().Answer(id, permission.Answer{OptionID: d.OptionID, Source: src}); err != nil {
							s.log.Debug("answering a recorded decision again", "request_id", id, "error", err)
						}
						return
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
}

// stopLingering asks a lingering plugin process to stop now (SIGHUP: it
// closes its sessions, stopping their runtimes, and exits) and kills it if
// it has not within recoverStopWait. Only a process that is an avenor
// plugin is signalled: the pid may have been reused.
func stopLingering(pid int) {
	if pid <= 1 || !isAvenorPlugin(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGHUP)
	deadline := time.Now().Add(recoverStopWait)
	for time.Now().Before(deadline) {
		if !safefile.ProcessAlive(pid) || !isAvenorPlugin(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// isAvenorPlugin: pid runs with the plugin handshake's magic cookie in its
// environment (only an avenor plugin does).
func isAvenorPlugin(pid int) bool {
	env, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
	if err != nil {
		return false
	}
	return bytes.Contains(env, []byte(plugin.MagicCookieKey+"="+plugin.MagicCookieValue))
}

// logTail returns the seq of the last complete line of the log at path,
// cutting off a torn last line (one the dead supervisor was writing) so
// that the lines appended after it start on a line of their own.
func logTail(path string) (seq int64, lastType string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", fmt.Errorf("its event log %s is gone", path)
	}
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	if !st.Mode().IsRegular() {
		return 0, "", fmt.Errorf("its event log %s is not a regular file", path)
	}
	size := st.Size()
	n := min(size, int64(maxLogTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", err
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		cut := bytes.LastIndexByte(buf, '\n') + 1 // 0: the whole tail is one torn line
		if err := f.Truncate(size - n + int64(cut)); err != nil {
			return 0, "", fmt.Errorf("cutting the torn last line of %s: %w", path, err)
		}
		buf = buf[:cut]
	}
	buf = bytes.TrimRight(buf, "\n")
	if len(buf) == 0 {
		return 0, "", nil
	}
	line := buf[bytes.LastIndexByte(buf, '\n')+1:]
	var head struct {
		Seq   int64  `json:"seq"`
		Event string `json:"event"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return 0, "", fmt.Errorf("the last line of its event log %s does not parse: %v", path, err)
	}
	return head.Seq, head.Event, nil
}

// maxReplayTail bounds how much of an event log's end is compared with the
// events a re-attached plugin sends again.
const maxReplayTail = 4 << 20

// stampedKeys are the envelope fields the host adds: they are not the
// plugin's, and do not take part in comparing its events.
var stampedKeys = []string{"seq", "ts", "run_id", "run_label", "runtime_id", "session_id"}

// logTailEvents returns the plugin's events at the end of the log (host
// events left out, but avenor.error and avenor.warning, which plugins
// emit too), oldest first, each in its canonical form (eventKey).
func logTailEvents(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := min(st.Size(), int64(maxReplayTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if n < st.Size() && len(lines) > 0 {
		lines = lines[1:] // the first may be cut
	}
	var out []string
	for _, line := range lines {
		var ev map[string]any
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		typ, _ := ev["event"].(string)
		if event.IsHostEvent(sdk.EventType(typ)) && typ != string(event.TypeError) && typ != string(event.TypeWarning) {
			continue
		}
		out = append(out, eventKey(ev))
	}
	return out, nil
}

// eventKey is an event's canonical form: its JSON without the envelope,
// keys sorted, numbers as encoding/json writes float64s.
func eventKey(ev map[string]any) string {
	c := make(map[string]any, len(ev))
	for k, v := range ev {
		c[k] = v
	}
	for _, k := range stampedKeys {
		delete(c, k)
	}
	b, _ := json.Marshal(c)
	var round any
	if json.Unmarshal(b, &round) == nil {
		b, _ = json.Marshal(round)
	}
	return string(b)
}

// writtenIn returns how many of the events a re-attached plugin sends
// again (the oldest first) the log already ends with: the largest j whose
// first j replayed events are the log's last j plugin events. A flood of
// identical events can make it take a few lost ones for written; it never
// writes one twice that the log holds.
func writtenIn(tail []string) func([]sdk.Event) int {
	return func(replay []sdk.Event) int {
		keys := make([]string, len(replay))
		for i, ev := range replay {
			m := make(map[string]any, len(ev.Fields)+1)
			for k, v := range ev.Fields {
				m[k] = v
			}
			m["event"] = string(ev.Type)
			keys[i] = eventKey(m)
		}
	next:
		for j := min(len(keys), len(tail)); j > 0; j-- {
			for i := range j {
				if keys[i] != tail[len(tail)-j+i] {
					continue next
				}
			}
			return j
		}
		return 0
	}
}

// lastTurnEvents returns the events of the log's last turn (after its last
// avenor.turn.start), within the log's last maxReplayTail bytes.
func lastTurnEvents(path string) []event.Event {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	n := min(st.Size(), int64(maxReplayTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	var out []event.Event
	for _, line := range bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n")) {
		var ev event.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Type() == event.TypeTurnStart {
			out = out[:0]
			continue
		}
		out = append(out, ev)
	}
	return out
}

// readSentinel reads a sentinel's exit code and stop reason.
func readSentinel(path string) (exit int, stop sdk.StopReason, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	lines := bytes.Split(data, []byte("\n"))
	if string(lines[0]) == sentinel.StatusDone {
		exit, ok = 0, true
	}
	for _, line := range lines[1:] {
		k, v, found := bytes.Cut(line, []byte("="))
		if !found {
			continue
		}
		switch string(k) {
		case "EXIT_CODE":
			_, _ = fmt.Sscan(string(v), &exit)
			ok = true
		case "STOP_REASON":
			stop = sdk.StopReason(v)
		}
	}
	return exit, stop, ok
}
