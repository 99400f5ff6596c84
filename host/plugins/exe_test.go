package plugins

import (
	"os"
	"testing"
)

// Every plugin process is told which avenor launched it.
func TestExecutableEnv(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	if got := executableEnv(); len(got) != 1 || got[0] != ExecutableEnv+"="+exe {
		t.Fatalf("executableEnv() = %q, want %s=%s", got, ExecutableEnv, exe)
	}
}
