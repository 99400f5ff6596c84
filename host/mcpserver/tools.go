package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ToolNames are the tools a Server serves: the original's seven run tools,
// then avenor_cancel and avenor_list_backends.
var ToolNames = []string{
	"avenor_spawn", "avenor_status", "avenor_result", "avenor_answer_permission",
	"avenor_events", "avenor_follow_up", "avenor_shutdown", "avenor_cancel", "avenor_list_backends",
	"avenor_answer_question", "avenor_set_budget",
}

// Every args struct is decoded against a schema inferred from it, which
// refuses unknown keys (additionalProperties: false) and requires every
// field without omitempty: a misspelled key is an error, never ignored.

type spawnArgs struct {
	RepoDir      string     `json:"repo_dir" jsonschema:"the repository (working directory) the agent runs in; an absolute path"`
	Agent        string     `json:"agent,omitempty" jsonschema:"agent name; omitted: the backend's default agent"`
	Prompt       string     `json:"prompt,omitempty" jsonschema:"the first prompt"`
	PromptFile   string     `json:"prompt_file,omitempty" jsonschema:"a file holding the first prompt (instead of prompt)"`
	Label        string     `json:"label,omitempty" jsonschema:"a name for the run (default: its run_id)"`
	Timeout      timeoutArg `json:"timeout,omitempty" jsonschema:"the run's time limit"`
	Model        string     `json:"model,omitempty" jsonschema:"model to use"`
	Thinking     string     `json:"thinking,omitempty" jsonschema:"thinking level: off, minimal, low, medium, high, xhigh or max; omitted: the backend default"`
	Backend      string     `json:"backend,omitempty" jsonschema:"runtime backend (see avenor_list_backends), e.g. opencode-acp, claude, codex-app-server, pi"`
	RosterFile   string     `json:"roster_file,omitempty" jsonschema:"path to a roster map (named backend/agent/model loadouts)"`
	RosterEntry  string     `json:"roster_entry,omitempty" jsonschema:"the roster entry to use"`
	ServerURL    string     `json:"server_url,omitempty" jsonschema:"opencode serve URL for the opencode-http backend"`
	SupervisorID string     `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path (default: this server's supervisor)"`
	AutoApprove  bool       `json:"auto_approve,omitempty" jsonschema:"approve every permission request, so the run needs no avenor_answer_permission"`
	// The run's permission mode and launch context (spawnlaunch.go).
	PermissionMode     string   `json:"permission_mode,omitempty" jsonschema:"what the run may do without asking: default (asks before edits and commands), accept-edits (edits allowed, asks before commands), plan (read-only: edits and commands denied) or full-access; omitted: the runtime's own behaviour"`
	AppendSystemPrompt string   `json:"append_system_prompt,omitempty" jsonschema:"standing instructions appended to the runtime's system prompt: the text, or @FILE (relative to repo_dir)"`
	AllowedTools       []string `json:"allowed_tools,omitempty" jsonschema:"the exact tools the run may use, in the runtime's own tool names; [] allows no tool; omitted: the runtime's defaults"`
	MCPConfig          string   `json:"mcp_config,omitempty" jsonschema:"a JSON file of MCP server definitions ({\"mcpServers\":{...}}, relative to repo_dir) the run may use; credentials as ${ENV_VAR} references"`

	// The turn watchdog (docs/unattended.md).
	ProgressTimeout  timeoutArg `json:"progress_timeout,omitempty" jsonschema:"no event for this long: the turn is hung"`
	ToolTimeout      timeoutArg `json:"tool_timeout,omitempty" jsonschema:"a tool call whose processes gain neither CPU nor I/O for this long is hung (needs watchdog)"`
	Watchdog         string     `json:"watchdog,omitempty" jsonschema:"what to do with a hung tool call or turn: warn, cancel or restart; omitted: progress_timeout alone ends the run"`
	WatchdogRestarts *int       `json:"watchdog_restarts,omitempty" jsonschema:"with watchdog restart: the most restarts (default 2); then the turn is cancelled"`
	Questions        bool       `json:"questions,omitempty" jsonschema:"hear the agent's own questions (question.request in avenor_events; answer with avenor_answer_question)"`

	// The sandbox (docs/sandbox.md); a follow-up runs inside the same.
	Sandbox           string   `json:"sandbox,omitempty" jsonschema:"launch the runtime inside a sandbox: off, workspace (only repo_dir, the runtime's own dirs and sandbox_allow_write writable) or read-only; refused where the machine or backend cannot enforce it; omitted: the supervisor's config (default off)"`
	SandboxNetwork    string   `json:"sandbox_network,omitempty" jsonschema:"network inside the sandbox: host, none, model or allow=host[:port],…; omitted: host"`
	SandboxAllowWrite []string `json:"sandbox_allow_write,omitempty" jsonschema:"existing paths also writable under sandbox workspace (relative to repo_dir)"`
	SandboxDenyRead   []string `json:"sandbox_deny_read,omitempty" jsonschema:"paths made unreadable in the sandbox besides the secrets under $HOME it always hides (relative to repo_dir)"`
	SandboxRecover    bool     `json:"sandbox_recover,omitempty" jsonschema:"with sandbox workspace: a denied write is put to a person (a permission request of kind sandbox, answered with avenor_answer_permission) when the turn ends; approved, the session resumes with that one path writable; refused on backends that cannot resume across processes"`
	// Rate limits (docs/unattended.md#rate-limits).
	WaitOnRateLimit     bool `json:"wait_on_rate_limit,omitempty" jsonschema:"a turn refused for a rate limit waits for the reset and goes on in the same session (status shows waiting_reason rate_limit); refused on backends that cannot say when a limit lifts"`
	MaxRateLimitResumes *int `json:"max_rate_limit_resumes,omitempty" jsonschema:"with wait_on_rate_limit: the most resumes, 0 to 100 (default 5); then the turn fails"`
	ReportUsage         bool `json:"report_usage,omitempty" jsonschema:"report the account's rate-limit windows as avenor.usage.account events where the runtime reports them"`
	// Spend limits (docs/unattended.md#spend-limits).
	SpendTokens *int64     `json:"spend_tokens,omitempty" jsonschema:"pause the run at this many input plus output tokens (stop_reason budget_reached); raise with avenor_set_budget"`
	SpendUSD    *float64   `json:"spend_usd,omitempty" jsonschema:"pause the run at this cost in US dollars"`
	SpendWall   timeoutArg `json:"spend_wall,omitempty" jsonschema:"pause the run after this much time in turns"`
	SpendScope  string     `json:"spend_scope,omitempty" jsonschema:"what the limits count: runtime (default) or tree (with every run spawned under it)"`
	SpendPolicy string     `json:"spend_policy,omitempty" jsonschema:"at a limit: finish (default: the turn ends on its own) or interrupt (the turn is cancelled)"`
	// Context use (docs/unattended.md#context-use).
	ContextWarnPct *int `json:"context_warn_pct,omitempty" jsonschema:"report context use after each turn and warn once the window is this full, 1 to 100"`
	AutoCompactPct *int `json:"auto_compact_pct,omitempty" jsonschema:"ask the runtime to compact its context at the turn boundary once the window is this full, 1 to 100; refused on backends without the compaction capability"`
}

type spawnResult struct {
	RunID        string `json:"run_id"`
	Label        string `json:"label"`
	SupervisorID string `json:"supervisor_id"`
	RuntimeID    string `json:"runtime_id,omitempty"`
}

type statusArgs struct {
	RunID        string     `json:"run_id,omitempty" jsonschema:"run ID or label; omitted: every run"`
	View         string     `json:"view,omitempty" jsonschema:"lifecycle (compact, for polling) or full (default)"`
	WaitFor      string     `json:"wait_for,omitempty" jsonschema:"wait until: terminal, phase_change, turn_complete or permission (needs run_id); a permission request ends every wait"`
	Timeout      timeoutArg `json:"timeout,omitempty" jsonschema:"longest wait (needs wait_for)"`
	SupervisorID string     `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type resultArgs struct {
	RunID        string     `json:"run_id" jsonschema:"run ID or label"`
	Wait         *bool      `json:"wait,omitempty" jsonschema:"wait for the turn to end (default true)"`
	Timeout      timeoutArg `json:"timeout,omitempty" jsonschema:"longest wait"`
	SupervisorID string     `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type resultOut struct {
	RunID             string         `json:"run_id"`
	Label             string         `json:"label"`
	Status            string         `json:"status"`
	Ready             bool           `json:"ready"`
	RuntimeID         string         `json:"runtime_id,omitempty"`
	SessionID         string         `json:"session_id,omitempty"`
	StopReason        sdk.StopReason `json:"stop_reason,omitempty"`
	PendingPermission bool           `json:"pending_permission,omitempty"`
	Permission        any            `json:"permission,omitempty"`
	Output            string         `json:"output,omitempty"`
	OutputTruncated   bool           `json:"output_truncated,omitempty"`
	OutputEventPath   string         `json:"output_event_path,omitempty"`
	TimedOut          bool           `json:"timed_out,omitempty"`
	WaitClamped       bool           `json:"wait_clamped,omitempty"`
	// Next says what to do next, for an agent reading the result.
	Next string `json:"next,omitempty"`
}

type permissionArgs struct {
	RunID        string `json:"run_id" jsonschema:"run ID or label"`
	OptionID     string `json:"option_id" jsonschema:"the option to choose, one of permission.options[].optionId of avenor_status"`
	RequestID    string `json:"request_id,omitempty" jsonschema:"the request (default: the pending one)"`
	Message      string `json:"message,omitempty" jsonschema:"a write-in answer, for a request that takes one"`
	SupervisorID string `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type questionArgs struct {
	RunID        string     `json:"run_id" jsonschema:"run ID or label"`
	RequestID    string     `json:"request_id" jsonschema:"the question's request_id (its question.request event, see avenor_events)"`
	Answers      [][]string `json:"answers" jsonschema:"one answer per prompt, in order: the chosen option(s), or one free-text value"`
	SupervisorID string     `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type okResult struct {
	OK bool `json:"ok"`
}

type eventsArgs struct {
	RunID        string   `json:"run_id" jsonschema:"run ID or label"`
	Types        []string `json:"types,omitempty" jsonschema:"only these event types, e.g. session.end, tool.call, permission.request"`
	Limit        int      `json:"limit,omitempty" jsonschema:"most events returned (default 50, at most 500)"`
	AfterSeq     int64    `json:"after_seq,omitempty" jsonschema:"only events after this seq, oldest first (a cursor: pass the last latest_seq); omitted: the latest events"`
	SupervisorID string   `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type eventsOut struct {
	Events    []map[string]any `json:"events"`
	LatestSeq int64            `json:"latest_seq"`
	// EventPath is the complete log, named when a string was shortened.
	EventPath string `json:"event_path,omitempty"`
}

type followUpArgs struct {
	RunID        string `json:"run_id" jsonschema:"the prior run's ID or label"`
	Message      string `json:"message" jsonschema:"the follow-up prompt"`
	Label        string `json:"label,omitempty" jsonschema:"label of the new run (default <prior-label>-followup)"`
	SupervisorID string `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type followUpResult struct {
	RunID     string `json:"run_id"`
	Label     string `json:"label"`
	RuntimeID string `json:"runtime_id,omitempty"`
}

type shutdownArgs struct {
	SupervisorID string `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path (default: this server's)"`
	Force        bool   `json:"force,omitempty" jsonschema:"kill the runs at once instead of a graceful shutdown"`
}

type shutdownResult struct {
	OK        bool     `json:"ok"`
	CleanedUp []string `json:"cleaned_up"`
}

type cancelArgs struct {
	RunID        string `json:"run_id" jsonschema:"run ID or label"`
	SupervisorID string `json:"supervisor_id,omitempty" jsonschema:"supervisor socket path"`
}

type cancelResult struct {
	OK     bool   `json:"ok"`
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

type listBackendsArgs struct{}

type listBackendsResult struct {
	Backends any `json:"backends"`
	Count    int `json:"count"`
}

// tool is one tool's definition: name, title, description, annotations
// and its explicit schemas (schemas.go).
func tool(name, title, desc string, ann *mcp.ToolAnnotations, in, out *jsonschema.Schema) *mcp.Tool {
	ann.Title = title
	return &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ann, InputSchema: in, OutputSchema: out}
}

// Annotation hints: the read-only tools change nothing; shutdown and
// cancel end work (destructive), repeating them changes nothing more
// (idempotent); spawn and follow-up only add runs.
var (
	readOnly    = func() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{ReadOnlyHint: true} }
	additive    = func() *mcp.ToolAnnotations { return &mcp.ToolAnnotations{DestructiveHint: client.Bool(false)} }
	destructive = func() *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{DestructiveHint: client.Bool(true), IdempotentHint: true}
	}
)

var (
	waitConditions = []string{WaitTerminal, WaitPhaseChange, WaitTurnComplete, WaitPermission}
	views          = []string{"lifecycle", "full"}
)

func (s *Server) addTools() {
	mcp.AddTool(s.mcp, tool("avenor_spawn", "Spawn an agent run",
		"Spawn a new avenor run: an agent working in repo_dir on prompt. Returns its run_id; then wait with avenor_result or poll with avenor_status.",
		additive(),
		schemaOf[spawnArgs](map[string]*jsonschema.Schema{
			"timeout":         durationSchema("the run's time limit"),
			"thinking":        enum("thinking level; omitted: the backend default", thinkingLevels),
			"permission_mode": enum("", permissionModes),
			// The turn watchdog's.
			"progress_timeout": durationSchema("no event for this long: the turn is hung"),
			"tool_timeout":     durationSchema("a tool call whose processes gain neither CPU nor I/O for this long is hung (needs watchdog)"),
			"watchdog":         enum("what to do with a hung tool call or turn: warn, cancel or restart; omitted: progress_timeout alone ends the run", watchdogActions),
			// The sandbox's.
			"sandbox":         enum("launch the runtime inside a sandbox: off, workspace or read-only; omitted: the supervisor's config (default off)", sandboxProfiles),
			"sandbox_network": str("network inside the sandbox: host, none, model or allow=host[:port],… (e.g. allow=api.example.com:443,:8080); omitted: host"),
		}),
		schemaOf[spawnResult](nil)),
		s.spawn)
	mcp.AddTool(s.mcp, tool("avenor_status", "Run status",
		"Get the lifecycle status of a run (running, waiting = a permission request to answer, done, failed, timeout, killed), or of every run; optionally wait for terminal, phase_change, turn_complete or permission.",
		readOnly(),
		schemaOf[statusArgs](map[string]*jsonschema.Schema{
			"view":     enum("lifecycle (compact, for polling) or full (default)", views),
			"wait_for": enum("wait until the run ends (terminal, turn_complete), changes phase or asks for permission (needs run_id); a permission request ends every wait", waitConditions),
			"timeout":  durationSchema("longest wait (needs wait_for)"),
		}),
		statusOutSchema()),
		s.statusTool)
	mcp.AddTool(s.mcp, tool("avenor_result", "Run result",
		"Wait for a run's turn to end and return its final output (cut at 64 KiB; output_event_path then names the full log). Stops early on a permission request (status waiting).",
		readOnly(),
		schemaOf[resultArgs](map[string]*jsonschema.Schema{"timeout": durationSchema("longest wait")}),
		schemaOf[resultOut](map[string]*jsonschema.Schema{"permission": permissionSchema()})),
		s.result)
	mcp.AddTool(s.mcp, tool("avenor_answer_permission", "Answer a permission request",
		"Answer a run's pending permission request with one of its option_id values (see permission in avenor_status).",
		&mcp.ToolAnnotations{},
		schemaOf[permissionArgs](nil), schemaOf[okResult](nil)),
		s.answer)
	mcp.AddTool(s.mcp, tool("avenor_answer_question", "Answer a question",
		"Answer the question a run's agent asks (a question.request event in avenor_events): one answer per prompt, in order. A question not answered within its bound (timeout_ms) is given up and the agent goes on without an answer.",
		&mcp.ToolAnnotations{},
		schemaOf[questionArgs](nil), schemaOf[okResult](nil)),
		s.answerQuestion)
	mcp.AddTool(s.mcp, tool("avenor_events", "Run events",
		"Read events from a run's event log: the latest, or those after a seq cursor; long strings are shortened.",
		readOnly(),
		schemaOf[eventsArgs](nil),
		schemaOf[eventsOut](map[string]*jsonschema.Schema{"events": arrayOf("the events, oldest first", eventSchema())})),
		s.events)
	mcp.AddTool(s.mcp, tool("avenor_follow_up", "Follow up a run",
		"Continue a finished run's session with a new message, as a new run; returns its run_id.",
		additive(),
		schemaOf[followUpArgs](nil), schemaOf[followUpResult](nil)),
		s.followUp)
	mcp.AddTool(s.mcp, tool("avenor_shutdown", "Shut the supervisor down",
		"Shut the avenor supervisor down (its runs end) and delete the runs' logs and sentinels.",
		destructive(),
		schemaOf[shutdownArgs](nil), schemaOf[shutdownResult](nil)),
		s.shutdown)
	mcp.AddTool(s.mcp, tool("avenor_cancel", "Cancel a run",
		"Cancel a run's turn in flight (it ends killed, stop_reason cancelled); a follow-up can continue its session.",
		destructive(),
		schemaOf[cancelArgs](nil), schemaOf[cancelResult](nil)),
		s.cancel)
	mcp.AddTool(s.mcp, tool("avenor_list_backends", "List backends",
		"List the installed backends with their capabilities (resume, permission relay, model selection, thinking levels…) and whether each runtime is ready here; choose avenor_spawn's backend from it.",
		readOnly(),
		schemaOf[listBackendsArgs](nil),
		schemaOf[listBackendsResult](map[string]*jsonschema.Schema{"backends": arrayOf("one row a backend, as `avenor backends --json`", backendSchema())})),
		s.listBackends)
	mcp.AddTool(s.mcp, tool("avenor_set_budget", "Set a run's spend limits",
		"Raise (or lower) a run's spend limits; with resume, continue a run a limit paused (stop_reason budget_reached) with a new turn of its session.",
		additive(),
		schemaOf[setBudgetArgs](nil), schemaOf[setBudgetResult](map[string]*jsonschema.Schema{"spend": spendSchema()})),
		s.setBudget)
}

var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

func (s *Server) spawn(ctx context.Context, _ *mcp.CallToolRequest, a spawnArgs) (*mcp.CallToolResult, spawnResult, error) {
	var none spawnResult
	if a.RepoDir == "" {
		return nil, none, errors.New("repo_dir is required: pass the absolute path of the repository the agent should work in")
	}
	dir, err := filepath.Abs(a.RepoDir)
	if err != nil {
		return nil, none, err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, none, fmt.Errorf("repo_dir %q is not a directory: pass the absolute path of the repository the agent should work in", a.RepoDir)
	}
	if a.Prompt != "" && a.PromptFile != "" {
		return nil, none, errors.New("prompt and prompt_file are mutually exclusive: pass one")
	}
	if a.Thinking != "" && !contains(thinkingLevels, a.Thinking) {
		return nil, none, fmt.Errorf("invalid thinking %q: one of %s", a.Thinking, strings.Join(thinkingLevels, ", "))
	}
	p := client.SpawnParams{
		Prompt: a.Prompt, PromptFile: a.PromptFile, Dir: dir, Agent: a.Agent, Model: a.Model, Thinking: a.Thinking,
		ServerURL: a.ServerURL, Backend: a.Backend, AutoApprove: onlyTrue(a.AutoApprove), Questions: onlyTrue(a.Questions),
		RosterFile: a.RosterFile, RosterEntry: a.RosterEntry,
	}
	if a.Timeout != "" {
		secs, err := parseTimeout("timeout", string(a.Timeout))
		if err != nil {
			return nil, none, err
		}
		p.Timeout = secs
	}
	p.WaitOnRateLimit, p.ReportUsage, p.MaxRateLimitResumes = onlyTrue(a.WaitOnRateLimit), onlyTrue(a.ReportUsage), a.MaxRateLimitResumes
	if err := a.watchdogParams(&p); err != nil {
		return nil, none, err
	}
	if err := a.spendParams(&p); err != nil {
		return nil, none, err
	}
	if a.RosterEntry == "" {
		// A runtime whose CLI is missing or not logged in would be
		// spawned, fail before its session opens and leave the agent a
		// run to puzzle over: the spawn fails instead, with the hint.
		// (A roster entry names its backend in a file the supervisor
		// reads; that spawn is left to it.)
		if err := s.checkReady(ctx, dir, a.Backend); err != nil {
			return nil, none, err
		}
	}
	cn, err := s.supervisor(ctx, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	reg, err := s.registry(cn.socket)
	if err != nil {
		return nil, none, err
	}
	rec := &Record{Label: a.Label, Supervisor: cn.socket, SupervisorRunID: cn.runID, Dir: dir,
		Agent: a.Agent, Model: a.Model, Backend: a.Backend, Thinking: a.Thinking, RosterFile: a.RosterFile,
		RosterEntry: a.RosterEntry, AutoApprove: a.AutoApprove, Questions: a.Questions, CreatedAt: time.Now()}
	if err := a.launch(rec); err != nil {
		return nil, none, err
	}
	p.Label = rec.Label // none: the label is the run id, known once spawned
	if err := s.start(ctx, cn, reg, rec, p); err != nil {
		return nil, none, err
	}
	return nil, spawnResult{RunID: rec.RunID, Label: rec.Label, SupervisorID: rec.Supervisor, RuntimeID: rec.RuntimeID}, nil
}

// start spawns rec's runtime with p and stores the record with what the
// supervisor resolved (backend, agent, model, profile). The run id is the
// supervisor's run_id for the runtime, the one every event of the run
// carries: an agent reading the log finds the id it was given (a UUID only
// when a supervisor gives none). A record without a label is labelled with
// it.
func (s *Server) start(ctx context.Context, cn *conn, reg *registry, rec *Record, p client.SpawnParams) error {
	key := newRunID()
	rec.EventLog, rec.Sentinel = reg.artifacts(key)
	p.OnEvent, p.SentinelFile = rec.EventLog, rec.Sentinel
	var raw json.RawMessage
	if err := cn.c.Call(ctx, "spawn", rec.spawnCall(p), &raw); err != nil {
		return spawnError(err)
	}
	var sp client.Spawned
	if err := json.Unmarshal(raw, &sp); err != nil {
		return fmt.Errorf("spawn: the supervisor's answer: %w", err)
	}
	rec.RuntimeID, rec.SessionID = sp.RuntimeID, sp.SessionID
	rec.RunID = key
	if validRunID(sp.RunID) {
		rec.RunID = sp.RunID
	}
	if rec.Label == "" {
		rec.Label = rec.RunID
	}
	if sp.EffectiveBackend != "" {
		rec.Backend = sp.EffectiveBackend
	}
	if rt, err := cn.c.Runtime(ctx, sp.RuntimeID); err == nil {
		var extra struct {
			Thinking     string `json:"thinking"`
			AgentProfile string `json:"agent_profile"`
		}
		_ = json.Unmarshal(rt.Raw, &extra)
		for _, f := range []struct {
			dst *string
			src string
		}{
			{&rec.Backend, rt.Backend}, {&rec.Agent, rt.Agent}, {&rec.Model, rt.Model},
			{&rec.Thinking, extra.Thinking}, {&rec.AgentProfile, extra.AgentProfile}, {&rec.SessionID, rt.SessionID},
		} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
	}
	return reg.store(rec)
}

// spawnError says what a refused spawn needs.
func spawnError(err error) error {
	if c, ok := client.AsCapacity(err); ok {
		what := fmt.Sprintf("the supervisor runs its limit of %d runtimes", c.Limit)
		if c.Source == "tree" {
			what = fmt.Sprintf("the tree of supervisors runs its budget of %d runtimes", c.Limit)
		}
		return fmt.Errorf("spawn refused: %s (%d active); wait for a run to end (avenor_status wait_for terminal) or cancel one, then spawn again", what, c.Active)
	}
	return fmt.Errorf("spawn: %w", err)
}

func (s *Server) statusTool(ctx context.Context, _ *mcp.CallToolRequest, a statusArgs) (*mcp.CallToolResult, any, error) {
	if a.View != "" && a.View != "lifecycle" && a.View != "full" {
		return nil, nil, errors.New("view must be lifecycle or full")
	}
	if a.WaitFor != "" && !validWait(a.WaitFor) {
		return nil, nil, errors.New("wait_for must be one of terminal, phase_change, turn_complete, or permission")
	}
	if a.WaitFor == "" && a.Timeout != "" {
		return nil, nil, errors.New("timeout requires wait_for")
	}
	if a.WaitFor != "" && a.RunID == "" {
		return nil, nil, errors.New("run_id is required when wait_for is set")
	}
	secs := 0
	if a.Timeout != "" {
		var err error
		if secs, err = parseTimeout("timeout", string(a.Timeout)); err != nil {
			return nil, nil, err
		}
	}
	if a.RunID == "" {
		return s.list(ctx, a)
	}
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, nil, err
	}
	var st runStatus
	if a.WaitFor != "" {
		st, err = s.wait(ctx, r, a.WaitFor, secs)
	} else {
		st, err = s.status(ctx, r)
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, st.view(a.View), nil
}

// list is every run of the supervisor: those it holds, then the finished
// runs of the registry it no longer lists.
func (s *Server) list(ctx context.Context, a statusArgs) (*mcp.CallToolResult, any, error) {
	cn, err := s.supervisor(ctx, a.SupervisorID)
	if err != nil {
		return nil, nil, err
	}
	reg, err := s.registry(cn.socket)
	if err != nil {
		return nil, nil, err
	}
	rts, err := cn.c.List(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list runs of %s: %w", cn.socket, err)
	}
	recs := reg.all()
	byRuntime := map[string]*Record{}
	for _, rec := range recs {
		if rec.SupervisorRunID == "" || rec.SupervisorRunID == cn.runID {
			byRuntime[rec.RuntimeID] = rec
		}
	}
	runs := []map[string]any{}
	seen := map[string]bool{}
	for _, rt := range rts {
		rec := byRuntime[rt.RuntimeID]
		if rec == nil {
			// Not spawned through this registry: shown under the
			// supervisor's own ids (its run_id, the one its events
			// carry); avenor_status run_id=<that id> adopts it.
			id := rt.RunID
			if id == "" {
				id = rt.RuntimeID
			}
			rec = &Record{RunID: id, Label: rt.Label, Supervisor: cn.socket, Sentinel: rt.SentinelFile, EventLog: rt.EventPath}
		}
		seen[rec.RunID] = true
		runs = append(runs, fromRuntime(rec, rt).view(a.View))
	}
	for _, rec := range recs {
		if seen[rec.RunID] {
			continue
		}
		if st, ok := fromSentinel(rec); ok {
			runs = append(runs, st.view(a.View))
		}
	}
	return nil, map[string]any{"runs": runs, "count": len(runs)}, nil
}

func (s *Server) result(ctx context.Context, _ *mcp.CallToolRequest, a resultArgs) (*mcp.CallToolResult, resultOut, error) {
	var none resultOut
	secs := 0
	if a.Timeout != "" {
		var err error
		if secs, err = parseTimeout("timeout", string(a.Timeout)); err != nil {
			return nil, none, err
		}
	}
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	var st runStatus
	if a.Wait == nil || *a.Wait {
		st, err = s.wait(ctx, r, WaitTurnComplete, secs)
	} else {
		st, err = s.status(ctx, r)
	}
	if err != nil {
		return nil, none, err
	}
	out := resultOut{RunID: st.RunID, Label: st.Label, Status: st.Status, RuntimeID: st.RuntimeID, SessionID: st.SessionID,
		StopReason: st.StopReason, PendingPermission: st.PendingPermission, Permission: st.Permission,
		TimedOut: st.TimedOut, WaitClamped: st.WaitClamped}
	out.Ready = terminal(st.Status) && !st.PendingPermission
	if out.Ready {
		full, ok := s.fullOutput(ctx, r)
		if !ok {
			full = st.FinalOutput
		}
		var cut bool
		out.Output, cut = cutString(full, MaxResultOutput)
		if cut || (!ok && st.FinalOutputTruncated) {
			out.OutputTruncated, out.OutputEventPath = true, r.rec.EventLog
		}
	}
	out.Next = nextStep(out)
	return nil, out, nil
}

// fullOutput is the run's complete final output: from the supervisor's
// result method while it holds the run, else from the last session.end of
// the event log (which outlives the supervisor and this server).
func (s *Server) fullOutput(ctx context.Context, r *resolved) (string, bool) {
	if r.live() {
		var res struct {
			FinalOutput string `json:"final_output"`
		}
		if err := r.conn.c.Call(ctx, "result", map[string]any{"runtime_id": r.rec.RuntimeID}, &res); err == nil {
			return res.FinalOutput, true
		}
	}
	return lastFinalOutput(r.rec.EventLog)
}

// nextStep is the hint of a result.
func nextStep(out resultOut) string {
	switch {
	case out.PendingPermission || out.Status == StatusWaiting:
		return "a permission request waits: read permission, then call avenor_answer_permission with this run_id and an option_id; then avenor_result again"
	case !out.Ready && out.TimedOut:
		return "the run is still going: call avenor_result again to keep waiting, or avenor_status for its progress"
	case !out.Ready:
		return "the run is still going: call avenor_result (wait true) to wait for its output"
	case out.SessionID == "":
		return fmt.Sprintf("the run ended %s (%s) before its session opened, so there is nothing to follow up: avenor_events shows why (often a runtime CLI that is missing or not logged in; avenor_list_backends says which backends are ready); fix that and spawn again", out.Status, out.StopReason)
	case out.Status == StatusDone && out.Output == "":
		return "the run ended without output: ask for it with avenor_follow_up"
	case out.Status != StatusDone:
		return fmt.Sprintf("the run ended %s (%s): avenor_events shows what happened; avenor_follow_up can continue its session", out.Status, out.StopReason)
	case out.OutputTruncated:
		return "the output was cut: read the rest in output_event_path (its last session.end)"
	}
	return ""
}

func (s *Server) answer(ctx context.Context, _ *mcp.CallToolRequest, a permissionArgs) (*mcp.CallToolResult, okResult, error) {
	var none okResult
	if a.OptionID == "" {
		return nil, none, errors.New("option_id is required: pass one of permission.options[].optionId from avenor_status")
	}
	if !utf8.ValidString(a.Message) {
		return nil, none, errors.New("message must be valid UTF-8 text")
	}
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	if !r.live() {
		return nil, none, fmt.Errorf("no pending permission request: run %s is not held by a running supervisor", r.rec.RunID)
	}
	req := a.RequestID
	if req == "" {
		st, err := s.status(ctx, r)
		if err != nil {
			return nil, none, err
		}
		if !st.PendingPermission {
			return nil, none, fmt.Errorf("no pending permission request: run %s is %s", r.rec.RunID, st.Status)
		}
		var p struct {
			RequestID string `json:"request_id"`
		}
		b, _ := json.Marshal(st.Permission)
		if json.Unmarshal(b, &p) != nil || p.RequestID == "" {
			return nil, none, errors.New("pending permission missing request_id: pass request_id")
		}
		req = p.RequestID
	}
	if err := r.conn.c.AnswerPermission(ctx, req, a.OptionID, a.Message, r.rec.RuntimeID); err != nil {
		var re *client.RPCError
		if errors.As(err, &re) && re.Code == client.CodeNoPendingPermission {
			return nil, none, fmt.Errorf("no pending permission request: %s (answered already, or the run moved on); call avenor_status to see the current one", re.Message)
		}
		return nil, none, fmt.Errorf("answer_permission: %w", err)
	}
	return nil, okResult{OK: true}, nil
}

func (s *Server) answerQuestion(ctx context.Context, _ *mcp.CallToolRequest, a questionArgs) (*mcp.CallToolResult, okResult, error) {
	var none okResult
	if a.RequestID == "" {
		return nil, none, errors.New("request_id is required: the request_id of the question.request event (avenor_events)")
	}
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	if !r.live() {
		return nil, none, fmt.Errorf("no waiting question: run %s is not held by a running supervisor", r.rec.RunID)
	}
	if err := r.conn.c.AnswerQuestion(ctx, "mcp", a.RequestID, a.Answers, r.rec.RuntimeID); err != nil {
		return nil, none, fmt.Errorf("answer_question: %w", err)
	}
	return nil, okResult{OK: true}, nil
}

func (s *Server) events(ctx context.Context, _ *mcp.CallToolRequest, a eventsArgs) (*mcp.CallToolResult, eventsOut, error) {
	var none eventsOut
	if a.Limit < 0 || a.AfterSeq < 0 {
		return nil, none, errors.New("limit and after_seq must not be negative")
	}
	limit := a.Limit
	if limit == 0 {
		limit = DefaultEventsLimit
	}
	limit = min(limit, MaxEventsLimit)
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	evs, latest, cut, err := logEvents(r.rec.EventLog, a.Types, a.AfterSeq, limit)
	if errors.Is(err, os.ErrNotExist) {
		return nil, eventsOut{Events: []map[string]any{}}, nil // nothing written yet
	}
	if err != nil {
		return nil, none, fmt.Errorf("read events of run %s: %w", r.rec.RunID, err)
	}
	out := eventsOut{Events: evs, LatestSeq: latest}
	if cut {
		out.EventPath = r.rec.EventLog
	}
	return nil, out, nil
}

func (s *Server) followUp(ctx context.Context, _ *mcp.CallToolRequest, a followUpArgs) (*mcp.CallToolResult, followUpResult, error) {
	var none followUpResult
	if a.Message == "" {
		return nil, none, errors.New("message is required: the prompt the run should continue with")
	}
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	prior := r.rec
	session := ""
	si, serr := readSentinel(prior.Sentinel)
	switch {
	case serr == nil && si.Status != "DONE":
		return nil, none, fmt.Errorf("run is not resumable (status: %s): spawn a new run instead", si.status())
	case serr == nil:
		session = si.Session
	}
	cn, err := s.supervisor(ctx, prior.Supervisor)
	if err != nil {
		return nil, none, err
	}
	// The live entry has the last word on identity (a loop's last phase may
	// have run another agent than the spawn named).
	p := client.SpawnParams{Dir: prior.Dir, Prompt: a.Message, Agent: prior.Agent, Model: prior.Model,
		Backend: prior.Backend, Thinking: prior.Thinking, AgentProfile: prior.AgentProfile, AutoApprove: onlyTrue(prior.AutoApprove),
		Questions: onlyTrue(prior.Questions)}
	if prior.SupervisorRunID == "" || prior.SupervisorRunID == cn.runID {
		if rt, err := cn.c.Runtime(ctx, prior.RuntimeID); err == nil {
			if session == "" {
				session = rt.SessionID
			}
			var extra struct {
				Thinking     string `json:"thinking"`
				AgentProfile string `json:"agent_profile"`
			}
			_ = json.Unmarshal(rt.Raw, &extra)
			p.Agent, p.Model, p.AgentProfile = rt.Agent, rt.Model, extra.AgentProfile
			if rt.Backend != "" {
				p.Backend = rt.Backend
			}
			if extra.Thinking != "" {
				p.Thinking = extra.Thinking
			}
		}
	}
	if session == "" {
		session = prior.SessionID
	}
	if session == "" {
		return nil, none, fmt.Errorf("run %s has no session to continue yet: wait until it has started (avenor_status), then follow it up", prior.RunID)
	}
	p.SessionID = session
	reg, err := s.registry(cn.socket)
	if err != nil {
		return nil, none, err
	}
	rec := &Record{Label: a.Label, Supervisor: cn.socket, SupervisorRunID: cn.runID, Dir: prior.Dir,
		Agent: p.Agent, Model: p.Model, Backend: p.Backend, Thinking: p.Thinking, AgentProfile: p.AgentProfile,
		AutoApprove: prior.AutoApprove, Questions: prior.Questions, FollowUpOf: prior.RunID, CreatedAt: time.Now()}
	rec.Launch = prior.Launch // the follow-up runs under the run's mode and launch context
	if rec.Label == "" {
		rec.Label = prior.Label + "-followup"
	}
	p.Label = rec.Label
	if err := s.start(ctx, cn, reg, rec, p); err != nil {
		return nil, none, fmt.Errorf("%w (a run still going cannot be followed up: wait for it with avenor_result first)", err)
	}
	prior.FollowUps = append(prior.FollowUps, rec.RunID)
	if err := r.reg.store(prior); err != nil {
		return nil, none, err
	}
	return nil, followUpResult{RunID: rec.RunID, Label: rec.Label, RuntimeID: rec.RuntimeID}, nil
}

func (s *Server) shutdown(ctx context.Context, _ *mcp.CallToolRequest, a shutdownArgs) (*mcp.CallToolResult, shutdownResult, error) {
	var none shutdownResult
	mode := "graceful"
	if a.Force {
		mode = "kill"
	}
	sock := a.SupervisorID
	if sock == "" {
		sock = s.defaultSocket()
	}
	if _, err := s.sup.shutdown(ctx, sock, mode); err != nil {
		return nil, none, err
	}
	reg, err := s.registry(sock)
	if err != nil {
		return nil, none, err
	}
	out := shutdownResult{OK: true, CleanedUp: []string{}}
	for _, rec := range reg.all() {
		out.CleanedUp = append(out.CleanedUp, reg.remove(rec)...)
	}
	return nil, out, nil
}

func (s *Server) cancel(ctx context.Context, _ *mcp.CallToolRequest, a cancelArgs) (*mcp.CallToolResult, cancelResult, error) {
	var none cancelResult
	r, err := s.resolve(ctx, a.RunID, a.SupervisorID)
	if err != nil {
		return nil, none, err
	}
	if !r.live() {
		st, err := s.status(ctx, r)
		if err != nil {
			return nil, none, err
		}
		return nil, cancelResult{OK: true, RunID: r.rec.RunID, Status: st.Status}, nil // over already
	}
	if err := r.conn.c.Cancel(ctx, r.rec.RuntimeID); err != nil {
		return nil, none, fmt.Errorf("cancel run %s: %w", r.rec.RunID, err)
	}
	st, err := s.status(ctx, r)
	if err != nil {
		return nil, none, err
	}
	return nil, cancelResult{OK: true, RunID: r.rec.RunID, Status: st.Status}, nil
}

func (s *Server) listBackends(ctx context.Context, _ *mcp.CallToolRequest, _ listBackendsArgs) (*mcp.CallToolResult, listBackendsResult, error) {
	var none listBackendsResult
	if s.o.ListBackends == nil {
		return nil, none, errors.New("backend listing is not available in this avenor mcp; run `avenor backends --json`")
	}
	rows, err := s.o.ListBackends(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("list backends: %w", err)
	}
	n := 0
	if b, err := json.Marshal(rows); err == nil {
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) == nil {
			n = len(arr)
		}
	}
	return nil, listBackendsResult{Backends: rows, Count: n}, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// onlyTrue sends auto_approve only when the agent asked for it: left out,
// the supervisor's config decides, as before client.SpawnParams took a
// *bool.
func onlyTrue(b bool) *bool {
	if !b {
		return nil
	}
	return client.Bool(true)
}
