package run

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/avenor-go/avenor/host/sandbox"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// SandboxMechanisms are this machine's sandbox mechanisms as a run would
// find them (docs/sandbox.md#mechanisms), its switches read with getenv:
// each usable or not, and where or why.
func SandboxMechanisms(ctx context.Context, getenv func(string) string) []sandbox.Status {
	return sandbox.Mechanisms(ctx, sandbox.Machine{LookPath: exec.LookPath, Getenv: getenv})
}

// addSandboxMechanisms gives each row whose backend launches its runtime
// inside a sandbox the mechanisms usable here ([] for none).
func addSandboxMechanisms(rows []BackendRow, st []sandbox.Status) {
	usable := []string{}
	for _, s := range st {
		if s.Usable {
			usable = append(usable, s.Mechanism)
		}
	}
	for i := range rows {
		if s := rows[i].Capabilities[sdk.CapSandbox]; s != "" && s != sdk.Unsupported {
			rows[i].SandboxMechanisms = append([]string{}, usable...)
		}
	}
}

// WriteSandboxMechanisms is the line under the backends table naming the
// mechanisms a --sandbox run can use here, or why none can.
func WriteSandboxMechanisms(out io.Writer, st []sandbox.Status) {
	var usable, not []string
	for _, s := range st {
		if s.Usable {
			usable = append(usable, fmt.Sprintf("%s (%s)", s.Mechanism, s.Detail))
		} else {
			not = append(not, fmt.Sprintf("%s (%s)", s.Mechanism, s.Detail))
		}
	}
	switch {
	case len(usable) == 0:
		fmt.Fprintf(out, "\nsandbox mechanisms: none usable here: %s; install bubblewrap (apt-get install bubblewrap) or run on a kernel with Landlock\n", strings.Join(not, ", "))
	case len(not) == 0:
		fmt.Fprintf(out, "\nsandbox mechanisms: %s\n", strings.Join(usable, ", "))
	default:
		fmt.Fprintf(out, "\nsandbox mechanisms: %s; not usable: %s\n", strings.Join(usable, ", "), strings.Join(not, ", "))
	}
}
