package client

import "github.com/spf13/pflag"

// RegisterSandbox adds the sandbox's flags (docs/sandbox.md) to fl; their
// values are P's.
func (f *SpawnFlags) RegisterSandbox(fl *pflag.FlagSet) {
	fl.StringVar(&f.P.Sandbox, "sandbox", "", "launch the runtime inside a sandbox: off, workspace or read-only")
	fl.StringVar(&f.P.SandboxNetwork, "sandbox-network", "", "network inside the sandbox: host, none, model or allow=host[:port],…")
	fl.StringArrayVar(&f.P.SandboxAllowWrite, "sandbox-allow-write", nil, "path also writable under --sandbox workspace (repeatable)")
	fl.StringArrayVar(&f.P.SandboxDenyRead, "sandbox-deny-read", nil, "path made unreadable in the sandbox (repeatable)")
}
