package run

import (
	"encoding/json"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Record is a supervised runtime's durable record, one entry of its
// supervisor's state file (docs/stable.md#surviving-a-restart): what a
// supervisor started after its predecessor died needs to recover the
// runtime (Recover) — its ids and paths, the spawn, the plugin to
// re-attach to, the session, the last seq written and the permission
// requests of its turn. Its JSON is the state file's format: a field's
// name never changes.
type Record struct {
	ID        string `json:"id"`
	N         int    `json:"n"`
	Label     string `json:"label,omitempty"`
	Backend   string `json:"backend"`
	Dir       string `json:"dir"`
	RunID     string `json:"run_id"`
	OnEvent   string `json:"on_event"`
	Sentinel  string `json:"sentinel_file"`
	PermBase  string `json:"perm_base,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	State     string `json:"state"` // running | parked | ended
	LastSeq   int64  `json:"last_seq"`
	Started   int64  `json:"started_ms"`
	// Spawn is what the runtime was spawned with, its supervisor's.
	Spawn json.RawMessage `json:"spawn"`
	// Plugin is the plugin process holding the session, nil when none runs.
	Plugin  *PluginRecord      `json:"plugin,omitempty"`
	Pending []PermissionRecord `json:"permissions,omitempty"`
	// AcceptedAt, when set, is the log's last seq when a follow-up prompt
	// was accepted whose run has not ended: a log that ends there holds
	// nothing of that prompt's run.
	AcceptedAt int64 `json:"prompt_accepted_at_seq,omitempty"`
	// Launch is the permission mode and launch context the runtime runs
	// under, nil when it asked for none (LaunchRecord).
	Launch *LaunchRecord `json:"launch,omitempty"`
	// Sandbox is the boundary the runtime runs inside, nil for none: a
	// recovery launches its follow-ups inside the same, or not at all.
	Sandbox *sdk.Sandbox `json:"sandbox,omitempty"`
	// RateLimit is the running turn's rate-limit wait, nil when it waits
	// for none: a successor resumes the wait (docs/unattended.md#rate-limits).
	RateLimit *RateLimitRecord `json:"rate_limit,omitempty"`
}

// A record's runtime states.
const (
	RecordRunning = "running"
	RecordParked  = "parked"
	RecordEnded   = "ended"
)

// Delivery states of a recorded permission request.
const (
	DeliveryPending   = "pending"   // no decision yet
	DeliveryDecided   = "decided"   // decided, not yet known to have reached the runtime
	DeliveryDelivered = "delivered" // the runtime has it (its turn went on or ended)
)

// PluginRecord is go-plugin's ReattachConfig of a plugin process.
type PluginRecord struct {
	Network         string `json:"network"`
	Address         string `json:"address"`
	PID             int    `json:"pid"`
	Protocol        string `json:"protocol"`
	ProtocolVersion int    `json:"protocol_version"`
}

// PermissionRecord is a permission request of a runtime and where its
// decision is.
type PermissionRecord struct {
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request,omitempty"` // the permission.request event
	Delivery  string          `json:"delivery"`
	Decision  json.RawMessage `json:"decision,omitempty"`
}

// Record is the runtime's durable record now; its owner fills N, Started
// and Spawn.
func (rt *Runtime) Record() Record {
	o := rt.spec.Options
	r := Record{
		ID: rt.spec.RuntimeID, Label: o.Label, Backend: o.Backend, Dir: o.Dir, RunID: o.RunID,
		OnEvent: rt.spec.EventLog, Sentinel: o.SentinelPath, PermBase: o.PermBase, LastSeq: rt.w.LatestSeq(),
	}
	l := rt.life
	l.mu.Lock()
	defer l.mu.Unlock()
	r.SessionID = l.sessionID
	switch {
	case l.state == Gone || l.dead != "" || rt.endedLocked() != "":
		r.State = RecordEnded
	case l.state == Parked:
		r.State = RecordParked
	default:
		r.State = RecordRunning
	}
	if p := l.launched; p != nil && l.state != Gone {
		if ra, ok := p.Client.Reattach(); ok {
			r.Plugin = &PluginRecord{Network: ra.Network, Address: ra.Address, PID: ra.PID, Protocol: ra.Protocol, ProtocolVersion: ra.ProtocolVersion}
		}
	}
	for _, id := range l.permOrder {
		r.Pending = append(r.Pending, *l.perms[id])
	}
	r.AcceptedAt = l.acceptedAt
	if w := l.rateWait; w != nil && r.State == RecordRunning {
		cp := *w
		r.RateLimit = &cp
	}
	r.Launch = recordLaunch(o)
	if o.Sandbox.Active() {
		sb := o.Sandbox
		r.Sandbox = &sb
	}
	return r
}

// permissionTypes are the events recordPermission sees; the others (the
// chunks, most of a stream) are not decoded for it.
var permissionTypes = map[sdk.EventType]bool{event.TypePermissionRequest: true, event.TypePermissionResponse: true}

// recordPermission records a permission asked or decided in the runtime's
// record (the run's typed facts record a session's start and end).
func (rt *Runtime) recordPermission(ev event.Event) {
	l := rt.life
	id, _ := ev["request_id"].(string)
	raw, _ := json.Marshal(ev)
	l.mu.Lock()
	switch ev.Type() {
	case event.TypePermissionRequest:
		if id == "" {
			l.mu.Unlock()
			return
		}
		if l.perms == nil {
			l.perms = map[string]*PermissionRecord{}
		}
		if _, ok := l.perms[id]; !ok {
			l.permOrder = append(l.permOrder, id)
		}
		l.perms[id] = &PermissionRecord{RequestID: id, Request: raw, Delivery: DeliveryPending}
	case event.TypePermissionResponse:
		if p := l.perms[id]; p != nil {
			p.Delivery, p.Decision = DeliveryDecided, raw
		}
	}
	l.mu.Unlock()
	l.owner.Changed()
}
