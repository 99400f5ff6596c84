package config

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Settings are the layered run settings. The zero value is not the default:
// use [Defaults] or [Load].
type Settings struct {
	// Backend names the runtime, e.g. "opencode-acp" (the default) or "pi".
	Backend string `koanf:"backend"`
	// Model is the backend-specific model id; "" lets the backend choose.
	Model string `koanf:"model"`
	// Agent is the agent name; "" for none.
	Agent string `koanf:"agent"`
	// Thinking is the thinking level (off|minimal|low|medium|high|xhigh|max),
	// validated per backend by the caller; "" for the backend's default.
	Thinking string `koanf:"thinking"`
	// Dir is the agent's working directory, default ".". A relative Dir is
	// returned as written, whichever layer set it; the caller resolves it.
	Dir string `koanf:"dir"`
	// Timeout is the overall wall clock; 0 (the default) means none.
	Timeout time.Duration `koanf:"timeout"`
	// ProgressTimeout is the no-event watchdog; 0 (the default) means none.
	ProgressTimeout time.Duration `koanf:"progress_timeout"`
	// ToolTimeout is the watchdog's tool rule: 0 (the default) means none.
	ToolTimeout time.Duration `koanf:"tool_timeout"`
	// Watchdog is the watchdog's action (warn|cancel|restart); "" (the
	// default) means no watchdog. The caller validates it.
	Watchdog string `koanf:"watchdog"`
	// WatchdogRestarts bounds a run's watchdog restarts; default 2.
	WatchdogRestarts int `koanf:"watchdog_restarts"`
	// MaxRetries is how many times an attempt ending in exit code 1 is
	// retried; default 0.
	MaxRetries int `koanf:"max_retries"`
	// WaitOnRateLimit makes a rate-limited turn wait for its reset and go
	// on; default false (it ends with the error).
	WaitOnRateLimit bool `koanf:"wait_on_rate_limit"`
	// MaxRateLimitResumes bounds a run's rate-limit resumes; default 5. The
	// caller validates it.
	MaxRateLimitResumes int `koanf:"max_rate_limit_resumes"`
	// ReportUsage lets avenor.usage.account into the stream; default false.
	ReportUsage bool `koanf:"report_usage"`
	// PermissionClaimTimeout bounds how long a permission request waits for
	// a control client; 0 (the default) means no deadline.
	PermissionClaimTimeout time.Duration `koanf:"permission_claim_timeout"`
	// AutoApprove approves ordinary permission requests; default false.
	AutoApprove bool `koanf:"auto_approve"`
	// Questions relays the runtime's own questions; default false.
	Questions bool `koanf:"questions"`
	// PermissionMode is what turns may do without asking; "" (the default)
	// keeps the runtime's own behaviour. The caller validates it.
	PermissionMode string `koanf:"permission_mode"`
	// AppendSystemPrompt is TEXT or @FILE; "" for none.
	AppendSystemPrompt string `koanf:"append_system_prompt"`
	// AllowedTools is a comma-separated tool list; whether it was set at
	// all (an empty list allows no tool) is the Provenance's to say.
	AllowedTools string `koanf:"allowed_tools"`
	// MCPConfig is the path of an MCP server definitions file; "" for none.
	MCPConfig string `koanf:"mcp_config"`
	// Sandbox is the profile the runtime is launched inside: off,
	// workspace or read-only; "" (the default) is off. SandboxNetwork is
	// host, none, model or allow=host[:port],…; "" is host. host/sandbox
	// validates them.
	Sandbox        string `koanf:"sandbox"`
	SandboxNetwork string `koanf:"sandbox_network"`
	// SandboxRecover asks a person to widen the sandbox after a denial
	// (docs/sandbox.md#recovery); false (the default) never widens it.
	SandboxRecover bool `koanf:"sandbox_recover"`
	// Spend limits (docs/unattended.md#spend-limits): 0 (the default) is no
	// limit; SpendScope runtime|tree and SpendPolicy finish|interrupt ("":
	// runtime, finish) and SpendPrices (MODEL=IN:OUT,...) are validated by
	// the caller.
	SpendTokens int           `koanf:"spend_tokens"`
	SpendUSD    float64       `koanf:"spend_usd"`
	SpendWall   time.Duration `koanf:"spend_wall"`
	SpendScope  string        `koanf:"spend_scope"`
	SpendPolicy string        `koanf:"spend_policy"`
	SpendPrices string        `koanf:"spend_prices"`
	// ContextWarnPct asks for context use (docs/unattended.md#context-use);
	// 0 (the default) none.
	ContextWarnPct int `koanf:"context_warn_pct"`
	// AutoCompactPct asks for a native compaction at the turn boundary
	// once the context window is this full (docs/unattended.md#context-use);
	// 0 is never.
	AutoCompactPct int `koanf:"auto_compact_pct"`
	// ServerURL is an external runtime server; "" for none. AVENOR_OPENCODE_URL
	// is not read here: it applies to opencode-http only, which the caller knows.
	ServerURL string `koanf:"server_url"`
	// Label is a free-form label stamped on events as run_label.
	Label string `koanf:"label"`
	// Linger is avenor stable's --linger: how long its plugins outlive it
	// when it dies; default 60s (plugin.DefaultLinger), 0 none.
	Linger time.Duration `koanf:"linger"`
	// Backends holds the [backends.<name>] tables from the config files,
	// merged key by key (project over user); nil when there are none.
	Backends map[string]BackendConfig `koanf:"backends"`
}

// BackendConfig is one [backends.<name>] table.
type BackendConfig struct {
	// Plugin is the plugin family that serves the backend; "" means the
	// family is the backend name's first word (opencode-http → opencode).
	Plugin string `koanf:"plugin"`
	// Env is extra environment for the runtime, such as API keys. Never log
	// the values: String redacts them.
	Env map[string]string `koanf:"env"`
	// Options are plugin options, passed to the plugin as they are.
	Options map[string]any `koanf:"options"`
}

// String shows the variable names in Env but not their values, so that
// printing Settings or a BackendConfig with %v does not leak secrets.
func (b BackendConfig) String() string {
	names := make([]string, 0, len(b.Env))
	for k := range b.Env {
		names = append(names, k+"=<redacted>")
	}
	sort.Strings(names)
	return fmt.Sprintf("{Plugin:%s Env:[%s] Options:%v}", b.Plugin, strings.Join(names, " "), b.Options)
}

// GoString is String, so %#v redacts too.
func (b BackendConfig) GoString() string { return b.String() }

// Defaults returns the built-in defaults, the lowest layer.
func Defaults() Settings {
	return Settings{
		Backend: "opencode-acp",
		Dir:     ".",
		Linger:  60 * time.Second,

		WatchdogRestarts:    2,
		MaxRateLimitResumes: 5,
	}
}

// Layer names where a setting came from.
type Layer string

// The layers, lowest first.
const (
	LayerDefault Layer = "default"
	LayerUser    Layer = "user"    // the user's config file
	LayerProject Layer = "project" // the project's .avenor/config.toml
	LayerEnv     Layer = "env"     // an AVENOR_* variable
	LayerFlag    Layer = "flag"    // a flag the user set
)

// Provenance says which layer last set each key. Every top-level setting has
// an entry ("timeout" → "env"). Backend tables are recorded per leaf, with
// dotted keys: "backends.pi.plugin", "backends.pi.env.OPENAI_API_KEY",
// "backends.pi.options.permission_gate".
type Provenance map[string]Layer
