package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SpawnFlags are spawn's params as `avenor control spawn` takes them on
// its command line (docs/cli.md#avenor-control): Params turns them into
// SpawnParams.
type SpawnFlags struct {
	// P holds the params given as text; empty ones are not sent.
	P SpawnParams
	// Timeout is a number of seconds or a Go duration; "": none sent.
	Timeout string
	// AutoApprove true sends auto_approve:true; false sends nothing.
	AutoApprove bool
	// MaxRetries is sent when MaxRetriesGiven, even as 0: it overrides the
	// supervisor's config.
	MaxRetries      int
	MaxRetriesGiven bool
	// AllowedTools is a comma list of tool names, sent when
	// AllowedToolsGiven, even empty (no tool at all).
	AllowedTools      string
	AllowedToolsGiven bool
	// ProgressTimeout and ToolTimeout are as Timeout; WatchdogRestarts is
	// sent when WatchdogRestartsGiven.
	ProgressTimeout, ToolTimeout string
	WatchdogRestarts             int
	WatchdogRestartsGiven        bool
	// RateLimit are the rate-limit flags (spawnflags_ratelimit.go).
	RateLimit RateLimitFlags
	Context   ContextFlags
}

// Params checks the flags and returns the params to send, only the values
// given, with their paths made absolute (WithAbsPaths): the supervisor's
// working directory is not the caller's. The errors name the flags.
func (f SpawnFlags) Params() (SpawnParams, error) {
	var none SpawnParams
	p := f.P
	if p.Prompt == "" && p.PromptFile == "" && p.LoopFile == "" && p.TeamFile == "" {
		return none, errors.New("--prompt, --prompt-file, --loop-file, or --team-file is required")
	}
	if p.Prompt != "" && p.PromptFile != "" {
		return none, errors.New("--prompt and --prompt-file are mutually exclusive")
	}
	if h := p.PermissionHandler; h != "" && (!strings.HasPrefix(h, "file:") || h == "file:") {
		return none, errors.New("--permission-handler supports file:<path> only")
	}
	if f.AutoApprove {
		p.AutoApprove = Bool(true)
	}
	for _, d := range []struct {
		flag, v string
		to      *any
	}{{"timeout", f.Timeout, &p.Timeout}, {"progress-timeout", f.ProgressTimeout, &p.ProgressTimeout}, {"tool-timeout", f.ToolTimeout, &p.ToolTimeout}} {
		if d.v == "" {
			continue
		}
		// docs/control-protocol.md#spawn: a number of seconds or a Go duration string.
		if n, err := strconv.Atoi(d.v); err == nil && n >= 0 {
			*d.to = n
		} else if _, err := time.ParseDuration(d.v); err == nil {
			*d.to = d.v
		} else {
			return none, fmt.Errorf("--%s %q: want seconds (600) or a Go duration (10m)", d.flag, d.v)
		}
	}
	if f.WatchdogRestartsGiven {
		p.WatchdogRestarts = Int(f.WatchdogRestarts)
	}
	if f.MaxRetriesGiven {
		p.MaxRetries = Int(f.MaxRetries)
	}
	if f.AllowedToolsGiven {
		p.AllowedTools = f.AllowedTools
	}
	f.RateLimit.apply(&p)
	f.Context.apply(&p)
	return p.WithAbsPaths()
}
