//go:build !linux

package agentproc

// LandlockABI is the Landlock ABI version this kernel enforces: Landlock
// is Linux's, so none here.
func LandlockABI() int { return 0 }

// processAlive: no sweeping outside Linux, where no launcher runs.
func processAlive(int) bool { return true }

func ownedByMe(string) bool { return false }
