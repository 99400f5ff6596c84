package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/avenor-go/avenor/client"
)

// resolved is a run found by run id or label: its record, the registry
// holding it, and the connection to its supervisor (nil when nothing
// answers there).
type resolved struct {
	rec  *Record
	reg  *registry
	conn *conn
}

// live: the run's supervisor answers and is the one that spawned it (not
// a new supervisor started at the same socket, whose rt_1 is another run).
func (r *resolved) live() bool {
	return r.conn != nil && (r.rec.SupervisorRunID == "" || r.rec.SupervisorRunID == r.conn.runID)
}

var errNoRunID = errors.New("run_id is required: pass the run_id that avenor_spawn returned (or the run's label)")

// resolve finds the run key names: in the registry of supervisorID (the
// default supervisor's when ""), by run id, runtime id or unique label;
// then by run id in the registries of other sockets; then in the
// supervisor's list (a runtime spawned by someone else is adopted: the
// original's rehydration).
func (s *Server) resolve(ctx context.Context, key, supervisorID string) (*resolved, error) {
	if key == "" {
		return nil, errNoRunID
	}
	reg, err := s.registry(supervisorID)
	if err != nil {
		return nil, err
	}
	rec, err := reg.find(key)
	if err != nil {
		return nil, err
	}
	if rec == nil && supervisorID == "" {
		if rec = reg.elsewhere(key); rec != nil {
			if reg, err = s.registry(rec.Supervisor); err != nil {
				return nil, err
			}
		}
	}
	if rec != nil {
		return &resolved{rec: rec, reg: reg, conn: s.sup.live(ctx, rec.Supervisor)}, nil
	}
	cn := s.sup.live(ctx, supervisorID)
	if cn == nil {
		return nil, fmt.Errorf("no run %q: this server has no record of it and no supervisor answers at %s; pass the run_id avenor_spawn returned", key, reg.socket())
	}
	list, err := cn.c.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list runs of %s: %w", cn.socket, err)
	}
	var found *client.Runtime
	var labelled []client.Runtime
	for i, rt := range list {
		if rt.RunID == key || rt.RuntimeID == key || filepath.Base(rt.SentinelFile) == "avenor-run-"+key+".done" {
			found = &list[i]
			break
		}
		if rt.Label == key {
			labelled = append(labelled, rt)
		}
	}
	if found == nil {
		switch len(labelled) {
		case 0:
			return nil, fmt.Errorf("no run %q on supervisor %s: call avenor_status without run_id to list the runs", key, cn.socket)
		case 1:
			found = &labelled[0]
		default:
			ids := make([]string, len(labelled))
			for i, rt := range labelled {
				ids[i] = rt.RuntimeID
			}
			return nil, fmt.Errorf("ambiguous label %s: matches runtimes [%s]; pass one of them as run_id", key, strings.Join(ids, ", "))
		}
	}
	id := found.RunID
	if !validRunID(id) {
		id = newRunID()
	}
	rec = &Record{
		RunID: id, Label: found.Label, RuntimeID: found.RuntimeID, SessionID: found.SessionID,
		Supervisor: cn.socket, SupervisorRunID: cn.runID, EventLog: found.EventPath, Sentinel: found.SentinelFile,
		Dir: found.Dir, Agent: found.Agent, Model: found.Model, Backend: found.Backend, Adopted: true,
		CreatedAt: time.UnixMilli(found.StartedAt),
	}
	if rec.Label == "" {
		rec.Label = rec.RunID
	}
	if err := reg.store(rec); err != nil {
		return nil, err
	}
	return &resolved{rec: rec, reg: reg, conn: cn}, nil
}

// find looks key up as a run id, then a runtime id (the newest record of
// it), then a label that only one run has.
func (r *registry) find(key string) (*Record, error) {
	if rec, err := r.get(key); rec != nil || err != nil {
		return rec, err
	}
	all := r.all()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].RuntimeID == key {
			return all[i], nil
		}
	}
	var labelled []*Record
	for _, rec := range all {
		if rec.Label == key {
			labelled = append(labelled, rec)
		}
	}
	switch len(labelled) {
	case 0:
		return nil, nil
	case 1:
		return labelled[0], nil
	}
	ids := make([]string, len(labelled))
	for i, rec := range labelled {
		ids[i] = rec.RunID
	}
	return nil, fmt.Errorf("ambiguous label %s: matches runs [%s]; pass one of them as run_id", key, strings.Join(ids, ", "))
}

// socket is the socket this registry belongs to.
func (r *registry) socket() string { return r.sock }

// status reads the run's status from its supervisor, or from its sentinel
// when the supervisor no longer holds it.
func (s *Server) status(ctx context.Context, r *resolved) (runStatus, error) {
	var lastErr error
	if r.live() {
		rt, err := r.conn.c.Runtime(ctx, r.rec.RuntimeID)
		if err == nil {
			return fromRuntime(r.rec, rt), nil
		}
		if ctx.Err() != nil {
			return runStatus{}, ctx.Err()
		}
		lastErr = err
	}
	if st, ok := fromSentinel(r.rec); ok {
		return st, nil
	}
	switch {
	case r.conn == nil:
		return runStatus{}, fmt.Errorf("run %s: its supervisor %s does not answer and the run left no sentinel: it was lost with its supervisor; spawn it again", r.rec.RunID, r.rec.Supervisor)
	case lastErr != nil && !isRPC(lastErr):
		return runStatus{}, fmt.Errorf("run %s: status from %s: %w; call again, the connection is re-dialled", r.rec.RunID, r.rec.Supervisor, lastErr)
	}
	return runStatus{}, fmt.Errorf("run %s (runtime %s) is no longer held by supervisor %s and left no sentinel: its outcome is unknown; read avenor_events, or spawn it again", r.rec.RunID, r.rec.RuntimeID, r.rec.Supervisor)
}

func isRPC(err error) bool {
	var re *client.RPCError
	return errors.As(err, &re)
}
