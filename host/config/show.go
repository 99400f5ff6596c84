package config

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/knadh/koanf/maps"
)

// Redacted replaces the value of every [backends.<name>].env variable that
// [Explain] shows: those are API keys and the like.
const Redacted = "<redacted>"

// Entry is one effective setting and where it came from, as `avenor config
// show` prints it.
type Entry struct {
	// Key is the setting's key ("max_retries") or, inside a backend table,
	// its dotted path ("backends.pi.env.OPENAI_API_KEY").
	Key string `json:"key"`
	// Value is the effective value as a config file would hold it: a
	// duration as its string ("1m30s"); an env variable's value is Redacted.
	Value any `json:"value"`
	// Source is where it came from: "default", the file's path,
	// "env AVENOR_<KEY>" or "flag --<key>".
	Source string `json:"source"`
}

// Explain lists every effective setting of s, in the order of [Keys], then
// the backend tables' leaves sorted by key, each with the source prov
// records for it. src must be the Sources s and prov were loaded from: it
// names the files.
func Explain(s Settings, prov Provenance, src Sources) []Entry {
	values := map[string]any{
		"backend": s.Backend, "model": s.Model, "agent": s.Agent, "thinking": s.Thinking, "dir": s.Dir,
		"timeout": s.Timeout, "progress_timeout": s.ProgressTimeout, "max_retries": s.MaxRetries,
		"tool_timeout": s.ToolTimeout, "watchdog": s.Watchdog, "watchdog_restarts": s.WatchdogRestarts,
		"permission_claim_timeout": s.PermissionClaimTimeout, "auto_approve": s.AutoApprove, "questions": s.Questions,
		"permission_mode": s.PermissionMode, "append_system_prompt": s.AppendSystemPrompt,
		"allowed_tools": s.AllowedTools, "mcp_config": s.MCPConfig,
		"server_url": s.ServerURL, "label": s.Label, "linger": s.Linger,
	}
	values["spend_tokens"], values["spend_usd"], values["spend_wall"] = s.SpendTokens, s.SpendUSD, s.SpendWall
	values["spend_scope"], values["spend_policy"], values["spend_prices"] = s.SpendScope, s.SpendPolicy, s.SpendPrices
	values["context_warn_pct"] = s.ContextWarnPct
	values["auto_compact_pct"] = s.AutoCompactPct
	// The sandbox's keys.
	values["sandbox"], values["sandbox_network"] = s.Sandbox, s.SandboxNetwork
	values["sandbox_recover"] = s.SandboxRecover
	// Rate limits and quota windows.
	values["wait_on_rate_limit"], values["max_rate_limit_resumes"], values["report_usage"] = s.WaitOnRateLimit, s.MaxRateLimitResumes, s.ReportUsage
	var out []Entry
	for _, spec := range keySpecs {
		if spec.kind == kindBackends {
			continue
		}
		v := values[spec.key]
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		out = append(out, Entry{Key: spec.key, Value: v, Source: sourceOf(prov[spec.key], spec.key, src)})
	}
	var backends []Entry
	for name, b := range s.Backends {
		base := "backends." + name
		if b.Plugin != "" {
			backends = append(backends, Entry{Key: base + ".plugin", Value: b.Plugin})
		}
		for k := range b.Env {
			backends = append(backends, Entry{Key: base + ".env." + k, Value: Redacted})
		}
		flat, _ := maps.Flatten(b.Options, nil, ".")
		for k, v := range flat {
			backends = append(backends, Entry{Key: base + ".options." + k, Value: v})
		}
	}
	sort.Slice(backends, func(i, j int) bool { return backends[i].Key < backends[j].Key })
	for i := range backends {
		backends[i].Source = sourceOf(prov[backends[i].Key], backends[i].Key, src)
	}
	return append(out, backends...)
}

// sourceOf names a layer as the user would look for it.
func sourceOf(layer Layer, key string, src Sources) string {
	switch layer {
	case LayerUser:
		return src.Dirs.UserConfigFile()
	case LayerProject:
		return ProjectConfigFile(src.ProjectDir)
	case LayerEnv:
		return "env " + envName(key)
	case LayerFlag:
		return "flag " + flagName(key)
	case "":
		return "unknown"
	}
	return string(layer)
}

// FormatValue writes an Entry's value as a config file would.
func FormatValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// Report is `avenor config show`'s answer (its --json): the config files a
// run in a directory reads and every effective setting with its source.
type Report struct {
	UserFile    string  `json:"user_file"`
	UserFound   bool    `json:"user_file_found"`
	Project     string  `json:"project,omitempty"`
	ProjectFile string  `json:"project_file,omitempty"`
	Settings    []Entry `json:"settings"`
}

// Show layers the config as a run started in dir would (the project is
// the nearest directory from dir up holding .avenor/), under flags keyed
// as [Keys], and explains every setting. getenv finds the XDG directories;
// environ is the AVENOR_* layer.
func Show(getenv func(string) string, environ []string, dir string, flags map[string]any, logger hclog.Logger) (Report, error) {
	dirs, err := DefaultDirs(getenv)
	if err != nil {
		return Report{}, err
	}
	project, _ := FindProject(dir)
	src := Sources{Environ: environ, Dirs: dirs, ProjectDir: project, Flags: flags, Logger: logger}
	settings, prov, err := Load(src)
	if err != nil {
		return Report{}, err
	}
	rep := Report{UserFile: dirs.UserConfigFile(), Project: project, Settings: Explain(settings, prov, src)}
	if _, err := os.Stat(rep.UserFile); err == nil {
		rep.UserFound = true
	}
	if project != "" {
		rep.ProjectFile = ProjectConfigFile(project)
	}
	return rep, nil
}
