package loop

import (
	"fmt"

	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// SandboxKeys are a roster entry's sandbox (docs/sandbox.md) as its file
// writes them: what avenor run's --sandbox, --sandbox-network,
// --sandbox-allow-write and --sandbox-deny-read say for the run. They
// apply in direct mode (a run or spawn of the entry itself), under the
// run's own; a loop or team phase does not carry a sandbox yet, so a
// phase of an entry that sets one is refused rather than run outside it.
// Relative paths are the file's directory's.
type SandboxKeys struct {
	Sandbox           string   `json:"sandbox,omitempty"`
	SandboxNetwork    string   `json:"sandbox_network,omitempty"`
	SandboxAllowWrite []string `json:"sandbox_allow_write,omitempty"`
	SandboxDenyRead   []string `json:"sandbox_deny_read,omitempty"`
}

// IsZero reports whether k sets nothing.
func (k SandboxKeys) IsZero() bool {
	return k.Sandbox == "" && k.SandboxNetwork == "" && k.SandboxAllowWrite == nil && k.SandboxDenyRead == nil
}

// check refuses a profile or network outside the vocabulary.
func (k SandboxKeys) check() error {
	if _, err := sdk.ParseSandboxProfile(k.Sandbox); err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	if _, err := sdk.ParseSandboxNetwork(k.SandboxNetwork); err != nil {
		return fmt.Errorf("sandbox_network: %w", err)
	}
	return nil
}

// rel makes k's relative paths dir's.
func (k SandboxKeys) rel(dir string) SandboxKeys {
	k.SandboxAllowWrite, k.SandboxDenyRead = sandbox.AbsUnder(dir, k.SandboxAllowWrite), sandbox.AbsUnder(dir, k.SandboxDenyRead)
	return k
}
