package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Run statuses, the vocabulary of every tool result (docs/mcp.md#tools): an agent
// reads these, never the supervisor's idle/running/ended.
const (
	StatusRunning = "running"
	StatusWaiting = "waiting" // a permission request waits for an answer
	StatusDone    = client.PhaseDone
	StatusFailed  = client.PhaseFailed
	StatusTimeout = client.PhaseTimeout
	StatusKilled  = client.PhaseKilled
)

// terminal reports whether a run with this status is over.
func terminal(status string) bool {
	switch status {
	case StatusDone, StatusFailed, StatusTimeout, StatusKilled:
		return true
	}
	return false
}

// runStatus is one run as avenor_status shows it: the original's keys, and
// supervisor_id and follow_ups besides.
type runStatus struct {
	RunID                string         `json:"run_id"`
	Label                string         `json:"label"`
	Status               string         `json:"status"`
	RuntimeID            string         `json:"runtime_id,omitempty"`
	SessionID            string         `json:"session_id,omitempty"`
	StopReason           sdk.StopReason `json:"stop_reason,omitempty"`
	Phase                string         `json:"phase,omitempty"`
	PhaseLabel           string         `json:"phase_label,omitempty"`
	PendingPermission    bool           `json:"pending_permission"`
	Permission           any            `json:"permission,omitempty"`
	LatestSeq            int64          `json:"latest_seq"`
	Dir                  string         `json:"dir,omitempty"`
	Backend              string         `json:"backend,omitempty"`
	Agent                string         `json:"agent,omitempty"`
	Model                string         `json:"model,omitempty"`
	ParentID             string         `json:"parent_id,omitempty"`
	Children             []string       `json:"children,omitempty"`
	EventPath            string         `json:"event_path,omitempty"`
	Usage                any            `json:"usage,omitempty"`
	FinalOutput          string         `json:"final_output,omitempty"`
	FinalOutputTruncated bool           `json:"final_output_truncated,omitempty"`
	SupervisorID         string         `json:"supervisor_id,omitempty"`
	FollowUps            []string       `json:"follow_ups,omitempty"`
	// Watchdog is the run's last turn-watchdog firing (docs/unattended.md).
	Watchdog any `json:"watchdog,omitempty"`
	// WaitingReason ("rate_limit") and RateLimitedUntil: the running turn
	// waits for a rate limit's reset (docs/unattended.md#rate-limits).
	WaitingReason    string `json:"waiting_reason,omitempty"`
	RateLimitedUntil string `json:"rate_limited_until,omitempty"`
	// Spend is the run's spend limits and what it spent
	// (docs/unattended.md#spend-limits), with limits only.
	Spend       any  `json:"spend,omitempty"`
	TimedOut    bool `json:"timed_out,omitempty"`
	WaitClamped bool `json:"wait_clamped,omitempty"`
}

// lifecycleKeys are what view:"lifecycle" keeps (the original's list).
var lifecycleKeys = []string{"run_id", "label", "status", "runtime_id", "phase", "phase_label",
	"pending_permission", "permission", "latest_seq", "timed_out", "wait_clamped", "watchdog",
	"waiting_reason", "rate_limited_until"}

// view shapes a status for view "" / "full" (everything) or "lifecycle".
func (st runStatus) view(v string) map[string]any {
	b, _ := json.Marshal(st)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if v != "lifecycle" {
		return m
	}
	out := make(map[string]any, len(lifecycleKeys))
	for _, k := range lifecycleKeys {
		if val, ok := m[k]; ok {
			out[k] = val
		}
	}
	return out
}

// identity fills the record's identity into a status.
func (st *runStatus) identity(rec *Record) {
	st.RunID, st.Label, st.SupervisorID = rec.RunID, rec.Label, rec.Supervisor
	st.FollowUps = rec.FollowUps
	if st.RuntimeID == "" {
		st.RuntimeID = rec.RuntimeID
	}
	if st.Dir == "" {
		st.Dir = rec.Dir
	}
	if st.EventPath == "" {
		st.EventPath = rec.EventLog
	}
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&st.Backend, rec.Backend}, {&st.Agent, rec.Agent}, {&st.Model, rec.Model}, {&st.SessionID, rec.SessionID},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
}

// fromRuntime maps a supervisor's runtime entry to a run status. A runtime
// parked after its turn (idle, parked) or ended has finished its run: its
// exit code says how (0 done, 124 timeout, 130 killed, else failed, as
// `avenor await` reads it), else the sentinel does.
func fromRuntime(rec *Record, rt client.Runtime) runStatus {
	st := runStatus{
		RuntimeID: rt.RuntimeID, SessionID: rt.SessionID, Phase: rt.Phase, PhaseLabel: rt.PhaseLabel,
		PendingPermission: rt.PendingPermission, LatestSeq: rt.LatestSeq, Dir: rt.Dir,
		Backend: rt.Backend, Agent: rt.Agent, Model: rt.Model, ParentID: rt.ParentID, Children: rt.Children,
		EventPath: rt.EventPath, FinalOutput: rt.FinalOutput, FinalOutputTruncated: rt.FinalOutputTruncated,
	}
	if raw := rawValue(rt.Usage); raw != nil {
		st.Usage = raw
	}
	if raw := rawValue(rt.Watchdog); raw != nil {
		st.Watchdog = raw
	}
	st.WaitingReason, st.RateLimitedUntil = rt.WaitingReason, rt.RateLimitedUntil
	if raw := rawValue(rt.Spend); raw != nil {
		st.Spend = raw
	}
	if rt.PendingPermission {
		st.Permission = rawValue(rt.Permission)
	}
	switch {
	case rt.Status == "ended" || rt.Parked:
		st.StopReason = rt.StopReason
		switch {
		case rt.ExitCode != nil:
			st.Status = exitStatus(*rt.ExitCode)
		default:
			st.Status = StatusDone
			if si, err := readSentinel(rec.Sentinel); err == nil {
				st.Status, st.StopReason = si.status(), si.StopReason
			}
		}
	case rt.PendingPermission:
		st.Status = StatusWaiting
	default:
		st.Status = StatusRunning
	}
	if !terminal(st.Status) {
		st.FinalOutput, st.FinalOutputTruncated = "", false
	}
	st.identity(rec)
	return st
}

// fromSentinel is the status of a run its supervisor no longer holds
// (stopped, restarted, the runtime reaped): the sentinel says how it ended.
func fromSentinel(rec *Record) (runStatus, bool) {
	si, err := readSentinel(rec.Sentinel)
	if err != nil || !terminal(si.status()) {
		return runStatus{}, false
	}
	st := runStatus{Status: si.status(), SessionID: si.Session, StopReason: si.StopReason, Phase: "ended"}
	st.identity(rec)
	return st, true
}

func rawValue(raw json.RawMessage) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// exitStatus maps a run's exit code (docs/run.md#exit-codes), as avenor await
// does: the ended statuses are client.Await's phases.
func exitStatus(code int) string { return client.PhaseOf(code) }

// sentinelInfo is a sentinel file (docs/run.md#sentinel).
type sentinelInfo struct {
	Status, Session string
	StopReason      sdk.StopReason
}

// status maps the sentinel's first line: DONE→done, FAILED and
// BLOCKED→failed, TIMEOUT→timeout, KILLED→killed.
func (s sentinelInfo) status() string {
	switch s.Status {
	case "DONE":
		return StatusDone
	case "FAILED", "BLOCKED":
		return StatusFailed
	case "TIMEOUT":
		return StatusTimeout
	case "KILLED":
		return StatusKilled
	}
	return strings.ToLower(s.Status)
}

// maxSentinelBytes bounds what is read of a sentinel (a few short lines).
const maxSentinelBytes = 64 << 10

func readSentinel(path string) (sentinelInfo, error) {
	if path == "" {
		return sentinelInfo{}, os.ErrNotExist
	}
	f, err := os.Open(path)
	if err != nil {
		return sentinelInfo{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxSentinelBytes)
	var si sentinelInfo
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first {
			si.Status = strings.TrimSpace(line)
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "SESSION":
			si.Session = v
		case "STOP_REASON":
			si.StopReason = sdk.StopReason(v)
		}
	}
	if si.Status == "" {
		return sentinelInfo{}, fmt.Errorf("sentinel %s is empty", path)
	}
	return si, sc.Err()
}

// parseTimeout reads a wait or spawn timeout as the original did: N or Ns
// seconds, Nm minutes, Nh hours, N > 0.
func parseTimeout(name, v string) (int, error) {
	t := strings.TrimSpace(v)
	mult := 1
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 's':
			t = t[:n-1]
		case 'm':
			t, mult = t[:n-1], 60
		case 'h':
			t, mult = t[:n-1], 3600
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 || t == "" || t[0] == '+' || t[0] == '-' || n > maxTimeoutSeconds/mult {
		return 0, fmt.Errorf("invalid %s %q: give a positive whole number of seconds, or N followed by s, m or h (30, 90s, 5m, 1h)", name, v)
	}
	return n * mult, nil
}

// maxTimeoutSeconds keeps a timeout's seconds far from overflowing a
// time.Duration (a year is long enough for any run).
const maxTimeoutSeconds = 366 * 24 * 3600
