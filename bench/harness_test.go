package bench

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"sync/atomic"
	"testing"

	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/examples/echo"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// binDir holds the built plugin binaries: AVENOR_TEST_BIN (make bench sets
// it), else a temporary build.
var binDir string

func TestMain(m *testing.M) {
	binDir = os.Getenv("AVENOR_TEST_BIN")
	cleanup := func() {}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "avenor-bench-bin")
		if err != nil {
			panic(err)
		}
		cleanup = func() { os.RemoveAll(dir) }
		binDir = dir
		root, _ := filepath.Abs("..")
		for pkg, name := range map[string]string{
			"./examples/echo/cmd/avenor-plugin-echo":           "avenor-plugin-echo",
			"./plugintest/scripted/cmd/avenor-plugin-scripted": "avenor-plugin-scripted",
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
			cmd.Dir = filepath.Join(root, "sdk")
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				panic(err)
			}
		}
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// mode is how the backend is served.
type mode struct {
	name   string
	launch func(backend string) func(ctx context.Context) (*plugins.Launched, error)
}

var modes = []mode{
	{"out-of-process", func(backend string) func(context.Context) (*plugins.Launched, error) {
		found := plugins.Found{Family: backend, Path: filepath.Join(binDir, plugins.BinaryPrefix+backend), Source: plugins.SourcePluginPath}
		return func(ctx context.Context) (*plugins.Launched, error) { return plugins.Launch(ctx, found, backend, nil) }
	}},
	{"in-process", func(backend string) func(context.Context) (*plugins.Launched, error) {
		return func(ctx context.Context) (*plugins.Launched, error) {
			var b sdk.Backend = scripted.New()
			if backend == "echo" {
				b = echo.New()
			}
			c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: backend, Version: "bench"}, nil, b)
			if err != nil {
				return nil, err
			}
			sb, _ := c.Backend(backend)
			return &plugins.Launched{Client: c, Backend: sb, Found: plugins.Found{Family: backend, Path: "in-process"}}, nil
		}
	}},
}

// countingWriter counts NDJSON lines (events) written to the log.
type countingWriter struct{ lines atomic.Int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.lines.Add(1)
		}
	}
	return len(p), nil
}

// run drives one whole avenor run through the host and returns its result.
func run(tb testing.TB, m mode, backend, prompt, stateDir string, events io.Writer) hostrt.Result {
	tb.Helper()
	res := hostrt.New(hostrt.Options{
		Backend: backend, Dir: tb.TempDir(), Prompt: prompt, RunID: "0123456789abcdef",
		Events: events, StateDir: stateDir, Launch: m.launch(backend),
	}, nil).Run(context.Background())
	if res.ExitCode != 0 {
		tb.Fatalf("%s run of %s exited %d (%s)", m.name, backend, res.ExitCode, res.StopReason)
	}
	return res
}
