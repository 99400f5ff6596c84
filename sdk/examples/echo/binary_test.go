package echo_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// TestBinary builds avenor-plugin-echo as a release would (Version set by
// ldflags) and runs one turn through it, as avenor does.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bin := filepath.Join(t.TempDir(), "avenor-plugin-echo")
	out, err := exec.Command("go", "build", "-ldflags", "-X github.com/avenor-go/avenor/sdk/examples/echo.Version=1.1.0",
		"-o", bin, "./cmd/avenor-plugin-echo").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Started by hand, a plugin explains itself and exits 1.
	out, err = exec.Command(bin).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "avenor backend plugin") {
		t.Errorf("started by hand: %v\n%s", err, out)
	}

	c, err := plugin.Launch(context.Background(), plugin.LaunchConfig{Path: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	if got := c.Info(); got.Name != "echo" || got.Version != "1.1.0" {
		t.Errorf("plugin info = %+v, want echo 1.1.0", got)
	}
	b, ok := c.Backend(echo.Name)
	if !ok {
		t.Fatal("the binary does not serve echo")
	}
	f := open(t, b, t.TempDir(), "", &testHost{})
	if res := f.prompt(t, "hi"); res.FinalOutput != "echo (turn 1): hi" {
		t.Errorf("final output = %q", res.FinalOutput)
	}
}
