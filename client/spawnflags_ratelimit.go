package client

import (
	"strconv"

	"github.com/spf13/pflag"
)

// RateLimitFlags are `avenor control spawn`'s rate-limit flags
// (docs/unattended.md#rate-limits): --wait-on-rate-limit,
// --max-rate-limit-resumes and --report-usage, each sent only when given.
type RateLimitFlags struct {
	Wait, ReportUsage bool
	MaxResumes        optInt
}

// Register adds the flags to fl.
func (f *RateLimitFlags) Register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.Wait, "wait-on-rate-limit", false, "wait for a rate limit's reset and go on in the same session")
	fl.Var(&f.MaxResumes, "max-rate-limit-resumes", "with --wait-on-rate-limit: the most resumes (0 to 100)")
	fl.BoolVar(&f.ReportUsage, "report-usage", false, "write the account's usage windows (avenor.usage.account)")
}

// apply sets p's rate-limit params from the flags given.
func (f RateLimitFlags) apply(p *SpawnParams) {
	if f.Wait {
		p.WaitOnRateLimit = Bool(true)
	}
	if f.ReportUsage {
		p.ReportUsage = Bool(true)
	}
	if f.MaxResumes.set {
		p.MaxRateLimitResumes = Int(f.MaxResumes.n)
	}
}

// ContextFlags are `avenor control spawn`'s context flags
// (docs/unattended.md#context-use): --context-warn-pct and
// --auto-compact-pct, each sent only when given.
type ContextFlags struct {
	WarnPct, AutoCompactPct optInt
}

// Register adds the flags to fl.
func (f *ContextFlags) Register(fl *pflag.FlagSet) {
	fl.Var(&f.WarnPct, "context-warn-pct", "report context use (avenor.context) and warn once the window is this full (1 to 100)")
	fl.Var(&f.AutoCompactPct, "auto-compact-pct", "compact the runtime's context at the turn boundary once the window is this full (1 to 100)")
}

// apply sets p's context params from the flags given.
func (f ContextFlags) apply(p *SpawnParams) {
	if f.WarnPct.set {
		p.ContextWarnPct = Int(f.WarnPct.n)
	}
	if f.AutoCompactPct.set {
		p.AutoCompactPct = Int(f.AutoCompactPct.n)
	}
}

// optInt is an int flag that knows whether it was given; the supervisor
// checks its range.
type optInt struct {
	n   int
	set bool
}

func (o *optInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.Itoa(o.n)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return err
	}
	o.n, o.set = n, true
	return nil
}

func (o *optInt) Type() string { return "int" }
