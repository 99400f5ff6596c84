package client

import (
	"context"
	"encoding/json"
)

// Status is the one-shot status snapshot (docs/control-protocol.md#status). Raw keeps the
// whole answer, including fields this version does not know.
type Status struct {
	SessionID         string          `json:"session_id"`
	RunID             string          `json:"run_id"`
	RunLabel          string          `json:"run_label"`
	Phase             string          `json:"phase"`
	PhaseLabel        string          `json:"phase_label"`
	LastEvent         string          `json:"last_event"`
	RetryAttempt      int             `json:"retry_attempt"`
	MaxRetries        int             `json:"max_retries"`
	PendingPermission bool            `json:"pending_permission"`
	Permission        json.RawMessage `json:"permission"`
	StartedAt         int64           `json:"started_at"`
	UpdatedAt         int64           `json:"updated_at"`
	TurnState         string          `json:"turn_state"`
	LatestSeq         int64           `json:"latest_seq"`
	PID               int             `json:"pid"`
	Raw               json.RawMessage `json:"-"`
}

// target is the optional runtime_id of stable supervisors.
func target(runtimeID []string) map[string]any {
	p := map[string]any{}
	if len(runtimeID) > 0 && runtimeID[0] != "" {
		p["runtime_id"] = runtimeID[0]
	}
	return p
}

// Identity returns the server's AVENOR_CONTROL_IDENTITY_TOKEN ("" if none).
func (c *Client) Identity(ctx context.Context) (string, error) {
	var res struct {
		Token string `json:"token"`
	}
	err := c.Call(ctx, "identity", nil, &res)
	return res.Token, err
}

// Status returns the run's status snapshot. A stable supervisor needs a
// runtime id and answers that runtime's entry (decode it from Raw).
func (c *Client) Status(ctx context.Context, runtimeID ...string) (Status, error) {
	var raw json.RawMessage
	if err := c.Call(ctx, "status", target(runtimeID), &raw); err != nil {
		return Status{}, err
	}
	var st Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return Status{}, err
	}
	st.Raw = raw
	return st, nil
}

// Result returns the complete final_output of the last session.end ("" before
// there is one).
func (c *Client) Result(ctx context.Context, runtimeID ...string) (string, error) {
	var res struct {
		FinalOutput string `json:"final_output"`
	}
	err := c.Call(ctx, "result", target(runtimeID), &res)
	return res.FinalOutput, err
}

// HistoryOptions are the history params; the zero value asks for the latest
// 64 events.
type HistoryOptions struct {
	RuntimeID string
	// Limit: 0 means 64; the server caps it at 256.
	Limit int
	// AfterSeq: only events with a greater seq.
	AfterSeq int64
}

// History is a history answer.
type History struct {
	RuntimeID string  `json:"runtime_id"`
	Events    []Event `json:"-"`
	LatestSeq int64   `json:"latest_seq"`
}

// History returns buffered events, oldest first (in memory only: the
// --on-event file is the complete record).
func (c *Client) History(ctx context.Context, opts HistoryOptions) (History, error) {
	p := target([]string{opts.RuntimeID})
	if opts.Limit > 0 {
		p["limit"] = opts.Limit
	}
	if opts.AfterSeq > 0 {
		p["after_seq"] = opts.AfterSeq
	}
	var res struct {
		History
		Events []json.RawMessage `json:"events"`
	}
	if err := c.Call(ctx, "history", p, &res); err != nil {
		return History{}, err
	}
	h := res.History
	for _, raw := range res.Events {
		h.Events = append(h.Events, newEvent(raw))
	}
	return h, nil
}

// Cancel ends the run as SIGINT would (stop reason cancelled, exit 130).
func (c *Client) Cancel(ctx context.Context, runtimeID ...string) error {
	return c.Call(ctx, "cancel", target(runtimeID), nil)
}

// Prompt queues text to run after the current turn ends cleanly; it never
// pre-empts the turn in flight.
func (c *Client) Prompt(ctx context.Context, text string, runtimeID ...string) error {
	p := target(runtimeID)
	p["text"] = text
	return c.Call(ctx, "prompt", p, nil)
}

// InterruptAndPrompt cancels the turn in flight and continues the session
// with text; keepQueue false drops the queued prompts.
func (c *Client) InterruptAndPrompt(ctx context.Context, text string, keepQueue bool, runtimeID ...string) error {
	p := target(runtimeID)
	p["text"] = text
	p["keep_queue"] = keepQueue
	return c.Call(ctx, "interrupt_and_prompt", p, nil)
}

// AnswerPermission answers the pending permission request; message may be
// "". Nothing pending, or another request id, is CodeNoPendingPermission.
func (c *Client) AnswerPermission(ctx context.Context, requestID, optionID, message string, runtimeID ...string) error {
	return c.AnswerPermissionAs(ctx, "", requestID, optionID, message, runtimeID...)
}

// AnswerPermissionAs is AnswerPermission with a source hint: the front door
// the person answered on ("board"), which the permission.response event then
// names instead of "control". "" sends no hint; a server refuses a hint it
// does not know with CodeInvalidParams.
func (c *Client) AnswerPermissionAs(ctx context.Context, source, requestID, optionID, message string, runtimeID ...string) error {
	p := target(runtimeID)
	if source != "" {
		p["source"] = source
	}
	p["request_id"] = requestID
	p["option_id"] = optionID
	if message != "" {
		p["message"] = message
	}
	return c.Call(ctx, "answer_permission", p, nil)
}

// AnswerQuestion answers the runtime's waiting question requestID
// (answer_question): answers holds one entry per prompt, in order, each
// the chosen options or one free-text value. source is the front door's
// hint ("board", "mcp"; "" sends none). The server refuses, with an error
// that says which, a question never asked, already answered or expired,
// and answers that do not fit it (CodeInvalidParams).
func (c *Client) AnswerQuestion(ctx context.Context, source, requestID string, answers [][]string, runtimeID ...string) error {
	p := target(runtimeID)
	if source != "" {
		p["source"] = source
	}
	p["request_id"] = requestID
	p["answers"] = answers
	return c.Call(ctx, "answer_question", p, nil)
}
