package agentproc

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The WatchParent test re-executes this binary as its helper.
	if dir := os.Getenv(watchParentHelperEnv); dir != "" {
		os.Exit(watchParentHelper(dir))
	}
	// The reaper tests re-execute it as a plugin.
	if dir := os.Getenv(pluginHelperEnv); dir != "" {
		os.Exit(pluginHelper(dir))
	}
	goleak.VerifyTestMain(m)
}
