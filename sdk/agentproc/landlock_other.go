//go:build !linux

package agentproc

// LandlockABI is the Landlock ABI version this kernel enforces: Landlock
// is Linux's, so none here.
func LandlockABI() int { return 0 }
