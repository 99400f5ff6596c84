package run

import "time"

// FlagSet is what avenor run's flag helpers need of a flag set (a
// *pflag.FlagSet): each defines a group of the command's flags beside the
// settings it feeds, so the command line stays a list of groups.
type FlagSet interface {
	Bool(name string, value bool, usage string) *bool
	Int(name string, value int, usage string) *int
	String(name, value, usage string) *string
	Duration(name string, value time.Duration, usage string) *time.Duration
	StringArrayVar(p *[]string, name string, value []string, usage string)
}

// RateLimitFlags defines avenor run's rate-limit flags
// (docs/unattended.md#rate-limits), whose values reach the settings by
// their config keys (wait_on_rate_limit, ...).
func RateLimitFlags(fl FlagSet) {
	fl.Bool("wait-on-rate-limit", false, "a turn that fails on a rate limit waits for the reset and sends its prompt again on the same session instead of ending (backends that declare rate_limit_reset; refused on others)")
	fl.Int("max-rate-limit-resumes", 5, "with --wait-on-rate-limit: the most resumes of the run (0 to 100); the next rate limit ends the turn with the error")
	fl.Bool("report-usage", false, "write the runtime's account usage windows as avenor.usage.account events, where the runtime reports them")
}

// SandboxFlags defines avenor run's sandbox flags (docs/sandbox.md): the
// profile and network by their config keys, the path lists into c.
func (c *Command) SandboxFlags(fl FlagSet) {
	fl.String("sandbox", "", "launch the runtime inside a sandbox: off, workspace (only --dir, the runtime's own dirs and --sandbox-allow-write writable) or read-only; refused where this machine or the backend cannot enforce it (default off)")
	fl.String("sandbox-network", "", "network inside the sandbox: host, none, model or allow=host[:port],… (default host)")
	fl.StringArrayVar(&c.Sandbox.AllowWrite, "sandbox-allow-write", nil, "absolute, existing path also writable under --sandbox workspace (repeatable)")
	fl.StringArrayVar(&c.Sandbox.DenyRead, "sandbox-deny-read", nil, "absolute path made unreadable in the sandbox, besides the secrets under $HOME it always hides (repeatable)")
	fl.Bool("sandbox-recover", false, "with --sandbox workspace: a denied write is put to a person as a permission request of kind sandbox when the turn ends; approved, the same session resumes with that one path writable (backends that resume across processes; refused on others)")
}
