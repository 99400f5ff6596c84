package procsession

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestStartFailures(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		path    string
		want    string
		missing bool
	}{
		{"a name not in PATH", "avenor-no-such-cli", `toy: the runtime CLI "avenor-no-such-cli" was not found in PATH; install it with: npm i toy`, true},
		{"a path that does not exist", "/nonexistent/toy", `toy: the runtime CLI "/nonexistent/toy" was not found at that path; install it with: npm i toy`, true},
		{"a file that cannot run", notExec, "toy: starting " + notExec + ": ", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start("toy", agentproc.Spec{Path: tt.path, InstallHint: "install it with: npm i toy"})
			if err == nil {
				_ = p.Stop(time.Second)
				t.Fatal("Start succeeded")
			}
			var re *runtime.Error
			if !errors.As(err, &re) || re.Fault != runtime.FaultRuntime || !strings.HasPrefix(re.Message, tt.want) {
				t.Errorf("Start = %#v; want a runtime fault starting %q", err, tt.want)
			}
			if got := errors.Is(err, runtime.ErrRuntimeMissing); got != tt.missing {
				t.Errorf("errors.Is(err, ErrRuntimeMissing) = %v, want %v", got, tt.missing)
			}
		})
	}
}

func TestStartRuns(t *testing.T) {
	p, err := Start("toy", agentproc.Spec{Path: "/bin/sh", Args: []string{"-c", "exit 0"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not end")
	}
}

func TestCapabilities(t *testing.T) {
	got := Capabilities(runtime.CapResume).With(runtime.CapModelSelection, runtime.Experimental)
	want := runtime.CapabilityTable{
		runtime.CapNewSessions: runtime.Supported, runtime.CapPrompt: runtime.Supported, runtime.CapCancel: runtime.Supported,
		runtime.CapEventStreaming: runtime.Supported, runtime.CapSubprocessDiscovery: runtime.Supported,
		runtime.CapResume: runtime.Supported, runtime.CapModelSelection: runtime.Experimental,
	}
	if len(got) != len(want) {
		t.Errorf("Capabilities = %v, want %v", got, want)
	}
	for c, l := range want {
		if got[c] != l {
			t.Errorf("Capabilities()[%s] = %q, want %q", c, got[c], l)
		}
	}
}
