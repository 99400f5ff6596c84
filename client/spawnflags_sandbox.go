package client

import (
	"strconv"

	"github.com/spf13/pflag"
)

// RegisterSandbox adds the sandbox's flags (docs/sandbox.md) to fl; their
// values are P's.
func (f *SpawnFlags) RegisterSandbox(fl *pflag.FlagSet) {
	fl.StringVar(&f.P.Sandbox, "sandbox", "", "launch the runtime inside a sandbox: off, workspace or read-only")
	fl.StringVar(&f.P.SandboxNetwork, "sandbox-network", "", "network inside the sandbox: host, none, model or allow=host[:port],…")
	fl.StringArrayVar(&f.P.SandboxAllowWrite, "sandbox-allow-write", nil, "path also writable under --sandbox workspace (repeatable)")
	fl.StringArrayVar(&f.P.SandboxDenyRead, "sandbox-deny-read", nil, "path made unreadable in the sandbox (repeatable)")
	fl.Var(optBool{&f.P.SandboxRecover}, "sandbox-recover", "with --sandbox workspace: put a denied write to a person when the turn ends; approved, the session resumes with that one path writable")
	fl.Lookup("sandbox-recover").NoOptDefVal = "true"
}

// optBool is a bool flag sent only when given: it sets *p.
type optBool struct{ p **bool }

func (o optBool) String() string {
	if o.p == nil || *o.p == nil {
		return ""
	}
	return strconv.FormatBool(**o.p)
}

func (o optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*o.p = Bool(v)
	return nil
}

func (o optBool) Type() string { return "bool" }
