package config

import (
	"strconv"
	"strings"
	"time"
)

// KeyDoc documents one setting, for --help and generated docs.
type KeyDoc struct {
	Key     string // as written in config files, e.g. "max_retries"
	Type    string // "string", "duration", "int", "bool" or "table"
	Default string // as it would be written in a config file
	Env     string // the environment variable read for it; "" when none
	Flag    string // the run flag that sets it; "" when none
	Meaning string
}

// kind is how a setting's values parse.
type kind int

const (
	kindString kind = iota
	kindDuration
	kindInt
	kindBool
	kindBackends
	kindNumber
)

var kindNames = [...]string{
	kindString:   "string",
	kindDuration: "duration",
	kindInt:      "int",
	kindBool:     "bool",
	kindBackends: "table",
	kindNumber:   "number",
}

type keySpec struct {
	key     string
	kind    kind
	def     any // the default, typed as Settings holds it; nil for backends
	meaning string
}

// keySpecs is the single list of settings: Load's allow-lists for files, env
// and flags, the defaults and [Keys] all derive from it. A test checks it
// against the koanf tags of Settings.
var keySpecs = []keySpec{
	{"backend", kindString, "opencode-acp", "runtime backend, e.g. opencode-acp, opencode-http, codex-app-server, gemini-acp, cursor-acp, pi, claude, claude-channel"},
	{"model", kindString, "", "backend-specific model id"},
	{"agent", kindString, "", "agent name"},
	{"thinking", kindString, "", "thinking level: off|minimal|low|medium|high|xhigh|max, validated per backend"},
	{"dir", kindString, ".", "working directory for the agent"},
	{"timeout", kindDuration, time.Duration(0), "overall wall clock (Go duration, e.g. \"90s\"); 0 means none"},
	{"progress_timeout", kindDuration, time.Duration(0), "no-event watchdog (Go duration); 0 means none"},
	{"tool_timeout", kindDuration, time.Duration(0), "with watchdog: a tool call whose own processes gain neither CPU nor I/O for this long is hung (Go duration); 0 means no tool rule"},
	{"watchdog", kindString, "", "what the turn watchdog does when a tool or the turn is hung: warn|cancel|restart; \"\" means no watchdog (progress_timeout alone ends a quiet turn, exit 124)"},
	{"watchdog_restarts", kindInt, 2, "with watchdog restart: the most restarts of one run; the next firing cancels the turn"},
	{"max_retries", kindInt, 0, "retries after an attempt exits with code 1"},
	// Rate limits and quota windows (docs/unattended.md#rate-limits).
	{"wait_on_rate_limit", kindBool, false, "a turn that fails on a rate limit waits for the reset and sends its prompt again on the same session instead of ending (backends that declare rate_limit_reset)"},
	{"max_rate_limit_resumes", kindInt, 5, "with wait_on_rate_limit: the most resumes of one run, 0 to 100; the next rate limit ends the turn with the error"},
	{"report_usage", kindBool, false, "report the runtime's account usage windows as avenor.usage.account events where the runtime reports them"},
	{"permission_claim_timeout", kindDuration, time.Duration(0), "how long a permission request waits for a control client (Go duration); 0 means no deadline"},
	{"auto_approve", kindBool, false, "auto-approve ordinary permission requests (not those requiring user input)"},
	{"questions", kindBool, false, "hear the runtime's own questions (question.request, answered with answer_question) on backends that relay them; false keeps what a runtime asks handled as before"},
	{"permission_mode", kindString, "", "what turns may do without asking: default|accept-edits|plan|full-access, validated per backend; \"\" keeps the runtime's own behaviour"},
	{"append_system_prompt", kindString, "", "standing instructions appended to the runtime's system prompt: TEXT, or @FILE (UTF-8)"},
	{"allowed_tools", kindString, "", "exact comma-separated tool list in the runtime's own names; set to \"\" allows no tool; unset keeps the runtime's defaults"},
	{"mcp_config", kindString, "", "JSON file of MCP server definitions ({\"mcpServers\":{...}}, the shape Claude Code uses); values as ${NAME} come from the environment"},
	// The sandbox (docs/sandbox.md).
	{"sandbox_recover", kindBool, false, "with sandbox workspace: a denied write is put to a person (a permission request of kind sandbox) when the turn ends; approved, the session resumes with that one path writable (backends that resume across processes)"},
	{"sandbox", kindString, "", "boundary the runtime is launched inside: off|workspace|read-only; \"\" is off"},
	{"sandbox_network", kindString, "", "network inside a sandbox: host|none|model|allow=host[:port],…; \"\" is host"},
	// Spend limits and context use (docs/unattended.md).
	{"spend_tokens", kindInt, 0, "spend limit: input plus output tokens, counted from what the runtime reports; the turn ends budget_reached (exit 5); 0 means none"},
	{"spend_usd", kindNumber, 0.0, "spend limit in US dollars: the runtime's reported cost, else spend_prices; 0 means none"},
	{"spend_wall", kindDuration, time.Duration(0), "spend limit: time spent in turns (Go duration); 0 means none"},
	{"spend_scope", kindString, "", "what spend limits count: runtime|tree (the runtime and every runtime started under it); \"\" is runtime"},
	{"spend_policy", kindString, "", "at a spend limit: finish (end at the turn's boundary) or interrupt (cancel the turn); \"\" is finish"},
	{"spend_prices", kindString, "", "price table for spend_usd: MODEL=INPUT:OUTPUT[,...] in US dollars per million tokens"},
	{"auto_compact_pct", kindInt, 0, "context use: ask the runtime to compact its context at the turn boundary once the window is this full (1-100), on backends with the compaction capability; 0 means never"},
	{"context_warn_pct", kindInt, 0, "context use: avenor.context after each turn and an avenor.warning once the window is this full (1-100); 0 means none"},
	{"server_url", kindString, "", "external runtime server URL"},
	{"label", kindString, "", "free-form label stamped on events as run_label"},
	{"linger", kindDuration, 60 * time.Second, "avenor stable: how long runtimes outlive a supervisor that died, for one restarted on the same socket to take them over (Go duration); 0 stops them at once"},
	{"backends", kindBackends, nil, "per-backend tables [backends.<name>]: plugin (family serving it), env (extra runtime environment, never logged), options (plugin options); files only"},
}

func lookupSpec(key string) (keySpec, bool) {
	for _, s := range keySpecs {
		if s.key == key {
			return s, true
		}
	}
	return keySpec{}, false
}

func knownKeys() []string {
	keys := make([]string, len(keySpecs))
	for i, s := range keySpecs {
		keys[i] = s.key
	}
	return keys
}

// envName is the environment variable read for a key: AVENOR_ plus the key
// in upper case.
func envName(key string) string { return "AVENOR_" + strings.ToUpper(key) }

// flagName is the run flag for a key: -- plus the key with dashes.
func flagName(key string) string { return "--" + strings.ReplaceAll(key, "_", "-") }

// Keys documents every setting in the order of [Settings]. Every key but
// backends is read from its environment variable and set by its flag. It
// returns a fresh slice each time.
func Keys() []KeyDoc {
	docs := make([]KeyDoc, len(keySpecs))
	for i, s := range keySpecs {
		d := KeyDoc{Key: s.key, Type: kindNames[s.kind], Meaning: s.meaning}
		switch v := s.def.(type) {
		case string:
			d.Default = strconv.Quote(v)
		case time.Duration:
			d.Default = strconv.Quote(v.String())
		case int:
			d.Default = strconv.Itoa(v)
		case bool:
			d.Default = strconv.FormatBool(v)
		case float64:
			d.Default = strconv.FormatFloat(v, 'f', -1, 64)
		}
		if s.kind != kindBackends {
			d.Env = envName(s.key)
			d.Flag = flagName(s.key)
		}
		docs[i] = d
	}
	return docs
}
