package stable

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/avenor-go/avenor/host/control"
)

// SpawnParams are the params of spawn (docs/control-protocol.md#spawn). Relative
// loop_file, team_file and roster_file paths are resolved against the
// spawn's dir.
type SpawnParams struct {
	Prompt            string `json:"prompt,omitempty"`
	PromptFile        string `json:"prompt_file,omitempty"`
	Dir               string `json:"dir,omitempty"`
	Agent             string `json:"agent,omitempty"`
	AgentProfile      string `json:"agent_profile,omitempty"`
	Label             string `json:"label,omitempty"`
	Model             string `json:"model,omitempty"`
	Thinking          string `json:"thinking,omitempty"`
	ServerURL         string `json:"server_url,omitempty"`
	Backend           string `json:"backend,omitempty"`
	OnEvent           string `json:"on_event,omitempty"`
	SentinelFile      string `json:"sentinel_file,omitempty"`
	PermissionHandler string `json:"permission_handler,omitempty"`
	AutoApprove       *bool  `json:"auto_approve,omitempty"`
	// Timeout is the runtime's wall clock per run: a JSON number of seconds
	// or a Go duration string (docs/control-protocol.md#spawn).
	Timeout     json.RawMessage `json:"timeout,omitempty"`
	MaxRetries  *int            `json:"max_retries,omitempty"`
	LoopFile    string          `json:"loop_file,omitempty"`
	TeamFile    string          `json:"team_file,omitempty"`
	RosterFile  string          `json:"roster_file,omitempty"`
	RosterEntry string          `json:"roster_entry,omitempty"`
	// SessionID resumes a session: a parked runtime's of this supervisor
	// (continued in its plugin when it kept one), or any the backend knows.
	SessionID      string `json:"session_id,omitempty"`
	ParentID       string `json:"parent_id,omitempty"`
	ParentRunID    string `json:"parent_run_id,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	LabelDerived   bool   `json:"label_derived,omitempty"`
}

// validate checks what needs no backend, in the order of avenor run's
// validation (docs/run.md#validation). A refused combination (or no prompt at all)
// is the spawn's own logic failing: a plain error, -32000 with its text
// (docs/control-protocol.md#errors). A value no spawn could take — a timeout that does not parse, a
// negative max_retries — is -32602, as params that do not decode are.
func (p *SpawnParams) validate() error {
	switch {
	case p.Prompt != "" && p.PromptFile != "":
		return errors.New("prompt and prompt_file are mutually exclusive")
	case p.LoopFile != "" && p.TeamFile != "":
		return errors.New("loop_file and team_file are mutually exclusive")
	case p.LoopFile != "" && p.SessionID != "":
		return errors.New("loop_file and session_id are mutually exclusive")
	case p.TeamFile != "" && p.SessionID != "":
		return errors.New("team_file and session_id are mutually exclusive")
	case p.Prompt == "" && p.PromptFile == "" && p.LoopFile == "" && p.TeamFile == "":
		return errors.New("prompt, prompt_file, loop_file, or team_file is required")
	}
	if err := p.validateRoster(); err != nil {
		return err
	}
	if p.MaxRetries != nil && *p.MaxRetries < 0 {
		return control.InvalidParams(fmt.Sprintf("max_retries must not be negative, got %d", *p.MaxRetries))
	}
	if _, err := ParseTimeout(p.Timeout); err != nil {
		return control.InvalidParams(err.Error())
	}
	if h := p.PermissionHandler; h != "" && !strings.HasPrefix(h, "file:") {
		return control.InvalidParams("permission_handler supports file:<path> only")
	}
	return nil
}

// validateRoster checks the roster params as avenor run checks its roster
// flags (docs/loop.md#rosters): roster_file with roster_entry is direct mode and
// excludes backend, agent and model; with loop_file or team_file,
// roster_file alone is the phases' fallback roster.
func (p *SpawnParams) validateRoster() error {
	phased := p.LoopFile != "" || p.TeamFile != ""
	switch {
	case p.RosterEntry == "" && p.RosterFile == "":
		return nil
	case p.RosterEntry != "" && p.RosterFile == "":
		return errors.New("roster_entry requires roster_file")
	case p.RosterEntry != "" && phased:
		return errors.New("roster_entry cannot be used with loop_file or team_file (set roster_entry on the phases)")
	case p.RosterEntry == "" && !phased:
		return errors.New("roster_file requires roster_entry (or a loop_file or team_file whose phases set roster_entry)")
	case phased:
		return nil
	}
	for _, f := range []struct{ key, val string }{{"backend", p.Backend}, {"agent", p.Agent}, {"model", p.Model}} {
		if f.val != "" {
			return fmt.Errorf("roster_entry and %s are mutually exclusive", f.key)
		}
	}
	return nil
}

// ParseTimeout reads a spawn timeout (docs/control-protocol.md#spawn): absent or null is 0, a
// JSON number is seconds, a string is a Go duration ("10m") or a number of
// seconds ("600"). Negative values are refused.
func ParseTimeout(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	bad := func(detail string) error {
		return fmt.Errorf("timeout %s: want a number of seconds (600) or a Go duration string (\"10m\")%s", raw, detail)
	}
	var secs float64
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, bad("")
		}
		s = strings.TrimSpace(s)
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			secs = f
		} else {
			d, err := time.ParseDuration(s)
			if err != nil {
				return 0, bad("")
			}
			if d < 0 {
				return 0, bad(": it is negative")
			}
			return d, nil
		}
	} else if err := json.Unmarshal(raw, &secs); err != nil {
		return 0, bad("")
	}
	if secs < 0 || math.IsNaN(secs) || secs > math.MaxInt64/float64(time.Second) {
		return 0, bad(": out of range")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// hash is the idempotency hash: SHA-256 of the canonical params without the
// key itself, the timeout normalised (600, "600" and "10m" are one value).
func (p SpawnParams) hash() string {
	c := p
	c.IdempotencyKey = ""
	c.Timeout = nil
	d, _ := ParseTimeout(p.Timeout)
	data, _ := json.Marshal(struct {
		SpawnParams
		TimeoutNS int64 `json:"timeout_ns"`
	}{c, int64(d)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// configKeys are the params that are config settings, keyed as host/config
// keys, only those the spawn gave.
func (p SpawnParams) configKeys() map[string]any {
	out := map[string]any{}
	str := func(key, v string) {
		if v != "" {
			out[key] = v
		}
	}
	str("backend", p.Backend)
	str("model", p.Model)
	str("agent", p.Agent)
	str("thinking", p.Thinking)
	str("dir", p.Dir)
	str("server_url", p.ServerURL)
	str("label", p.Label)
	if d, _ := ParseTimeout(p.Timeout); d > 0 {
		out["timeout"] = d
	}
	if p.MaxRetries != nil {
		out["max_retries"] = *p.MaxRetries
	}
	if p.AutoApprove != nil {
		out["auto_approve"] = *p.AutoApprove
	}
	return out
}
