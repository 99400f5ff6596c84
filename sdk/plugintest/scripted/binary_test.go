package scripted_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	"github.com/avenor-go/avenor/sdk/runtime"
)

var bins struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// pluginBinary builds avenor-plugin-scripted once, with Version set by
// ldflags as a release build would.
func pluginBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the plugin binary")
	}
	bins.once.Do(func() {
		if bins.dir, bins.err = os.MkdirTemp("", "scripted-bin-"); bins.err != nil {
			return
		}
		bins.path = filepath.Join(bins.dir, "avenor-plugin-scripted")
		out, err := exec.Command("go", "build", "-ldflags", "-X github.com/avenor-go/avenor/sdk/plugintest/scripted.Version=1.1.0",
			"-o", bins.path, "./cmd/avenor-plugin-scripted").CombinedOutput()
		if err != nil {
			bins.err = &buildError{err, out}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.path
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

func cleanupBinaries() {
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
}

// launch starts the built plugin binary as avenor would.
func launch(t *testing.T) *plugin.Client {
	t.Helper()
	c, err := plugin.Launch(context.Background(), plugin.LaunchConfig{Path: pluginBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	if got := c.Info(); got.Name != "scripted" || got.Version != "1.1.0" {
		t.Errorf("plugin info = %+v, want scripted 1.1.0 (set by ldflags)", got)
	}
	return c
}

func TestBinaryDieLeavesNoOrphan(t *testing.T) {
	c := launch(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	f := openWith(t, backend(t, c), runtime.OpenRequest{Env: map[string]string{scripted.PIDFileEnv: pidFile}}, &testHost{})
	r := await(t, f.run("child 30\nsay ready\ndie"), 10*time.Second)
	if runtime.FaultOf(r.err) != runtime.FaultPlugin || !errors.Is(r.err, plugin.ErrPluginGone) {
		t.Errorf("turn error = %v, want the plugin-gone error", r.err)
	}
	if f.host.text(msg) != "ready" {
		t.Errorf("said %q before dying", f.host.text(msg))
	}
	select {
	case <-c.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin process did not exit")
	}
	if err := c.ExitErr(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("exit = %v, want killed", err)
	}
	pid := readPID(t, pidFile)
	waitUntil(t, "the orphaned child to die", func() bool { return !alive(pid) })
}

func TestBinaryKilledWhileIgnoringCancel(t *testing.T) {
	c := launch(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	f := openWith(t, backend(t, c), runtime.OpenRequest{Env: map[string]string{scripted.PIDFileEnv: pidFile}}, &testHost{})
	ch := f.run("child 30\nignore-cancel\nsay ready\nsleep 30s")
	f.host.waitText(t, "ready")
	pid := readPID(t, pidFile)
	if err := f.sess.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		t.Fatalf("the turn honoured Cancel: %+v %v", r.res, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	c.Kill() // what the host does to a plugin that does not honour Cancel
	r := await(t, ch, 10*time.Second)
	if r.err == nil && r.res.StopReason != runtime.StopCancelled {
		t.Errorf("turn = %+v, want an error or cancelled", r.res)
	}
	waitUntil(t, "the child to die", func() bool { return !alive(pid) })
}
