//go:build e2e

package e2e

import (
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// TestSandboxLandlockOpencode: TestSandboxWorkspaceOpencode with Landlock
// forced: real opencode-acp (node, its own state directories, its tools)
// runs through the Landlock launcher; the write in --dir lands, the one
// beyond it does not, the turn completes and session.start names landlock.
func TestSandboxLandlockOpencode(t *testing.T) {
	w := newWorld(t, opencode, fakellm.Config{})
	w.env = append(w.env, "AVENOR_SANDBOX_MECHANISM=landlock")
	_, evs := writeInsideOutside(t, w)
	checkSandboxStart(t, evs, "landlock")
}
