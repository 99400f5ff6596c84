package plugintest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Run checks the plugin in h (Plugin and Backends) served in process over
// real gRPC, as behaviour-named subtests of t.
//
// In process, a "crash" is stopping the server and a "fresh plugin" is a
// new server over the same Go values, so state a backend keeps in memory
// survives it; RunBinary checks a restart for real.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if len(h.Backends) == 0 {
		t.Fatal("plugintest.Run: Harness.Backends is empty; give it the backends your main passes to plugin.Serve")
	}
	if h.Plugin.Name == "" {
		t.Fatal("plugintest.Run: Harness.Plugin.Name is empty; give it the plugin.Info your main passes to plugin.Serve")
	}
	h = h.withDefaults()
	runTests(t, inProcessTarget(h), h)
}

// RunBinary checks the plugin binary at path, launched as avenor launches
// it, as behaviour-named subtests of t. h's Plugin and Backends are
// ignored; its zero value uses the default prompts.
func RunBinary(t *testing.T, path string, h Harness) {
	t.Helper()
	h = h.withDefaults()
	runTests(t, binaryTarget(path, h), h)
}

// Verify checks one backend — the describe, session, permission and resume
// tiers; a bare backend cannot be restarted — and returns an error naming
// every failed behaviour, nil when it conforms.
func Verify(ctx context.Context, b runtime.Backend, h Harness) error {
	h = h.withDefaults()
	rep := Report{Target: b.Info().Name}
	tmp, err := os.MkdirTemp("", "avenor-plugintest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rs := &reportSink{ctx: ctx, rep: &rep, tmp: tmp}
	s := &suite{h: h}
	rs.group(b.Info().Name, func(k sink) { s.backendChecks(k, b) })
	return rep.Err()
}

// VerifyBinary checks the plugin binary at path, every tier, and reports
// each behaviour checked. The error is only for a binary that cannot be
// checked at all (it does not start, or is not an avenor plugin); failed
// behaviours are in the Report (see Report.Err).
func VerifyBinary(ctx context.Context, path string, h Harness) (Report, error) {
	h = h.withDefaults()
	return verify(ctx, binaryTarget(path, h), h)
}

// VerifyInProcess is VerifyBinary for the plugin in h (Plugin and
// Backends), served in process over real gRPC.
func VerifyInProcess(ctx context.Context, h Harness) (Report, error) {
	if len(h.Backends) == 0 {
		return Report{Target: "in-process"}, errors.New("plugintest: Harness.Backends is empty")
	}
	h = h.withDefaults()
	return verify(ctx, inProcessTarget(h), h)
}

func verify(ctx context.Context, tg *target, h Harness) (Report, error) {
	rep := Report{Target: tg.name}
	c, err := tg.launch(ctx)
	if err != nil {
		return rep, err
	}
	defer c.Kill()
	rep.Plugin = c.Info()
	tmp, err := os.MkdirTemp("", "avenor-plugintest-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(tmp)
	s := &suite{h: h, target: tg, client: c}
	s.all(&reportSink{ctx: ctx, rep: &rep, tmp: tmp})
	return rep, nil
}

// target is a plugin the kit can start afresh.
type target struct {
	name   string // the binary's path, or "in-process"
	binary bool
	launch func(ctx context.Context) (*plugin.Client, error)
}

func inProcessTarget(h Harness) *target {
	return &target{name: "in-process", launch: func(ctx context.Context) (*plugin.Client, error) {
		return plugin.ServeInProcess(ctx, h.Plugin, h.Logger, h.Backends...)
	}}
}

func binaryTarget(path string, h Harness) *target {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return &target{name: path, binary: true, launch: func(ctx context.Context) (*plugin.Client, error) {
		return plugin.Launch(ctx, plugin.LaunchConfig{Path: path, Logger: h.Logger})
	}}
}

// crash ends a plugin abruptly: SIGKILL for a process; for a plugin served
// in process, stopping its server is the nearest thing.
func crash(c *plugin.Client) {
	if pid := c.PID(); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return
	}
	c.Kill()
}

// sink receives the checks: subtests under Run, Results under Verify.
type sink interface {
	// group runs fn for a named group of checks.
	group(name string, fn func(sink))
	// check runs one check; fn returns nil (pass), a skip, or a failure.
	check(name string, fn func(e *env) error)
}

// env is what a check runs with.
type env struct {
	ctx context.Context
	// mkdir returns a fresh directory that is removed after the check.
	mkdir func() (string, error)
}

// skipError marks a check as skipped.
type skipError struct{ reason string }

func (e skipError) Error() string { return e.reason }

func skipf(format string, args ...any) error { return skipError{fmt.Sprintf(format, args...)} }

// testSink runs each check as a subtest.
type testSink struct{ t *testing.T }

func (s testSink) group(name string, fn func(sink)) {
	s.t.Run(name, func(t *testing.T) { fn(testSink{t}) })
}

func (s testSink) check(name string, fn func(e *env) error) {
	s.t.Run(name, func(t *testing.T) {
		t.Helper()
		err := fn(&env{ctx: t.Context(), mkdir: func() (string, error) { return t.TempDir(), nil }})
		var skip skipError
		switch {
		case err == nil:
		case errors.As(err, &skip):
			t.Skip(skip.reason)
		default:
			t.Error(err)
		}
	})
}

// reportSink collects Results.
type reportSink struct {
	ctx    context.Context
	rep    *Report
	prefix string
	tmp    string
	n      int
}

func (s *reportSink) group(name string, fn func(sink)) {
	sub := *s
	sub.prefix = s.prefix + name + "/"
	fn(&sub)
	s.n = sub.n
}

func (s *reportSink) check(name string, fn func(e *env) error) {
	var dirs []string
	e := &env{ctx: s.ctx, mkdir: func() (string, error) {
		s.n++
		d, err := os.MkdirTemp(s.tmp, "check-")
		if err == nil {
			dirs = append(dirs, d)
		}
		return d, err
	}}
	err := fn(e)
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
	res := Result{Name: s.prefix + name, Status: Pass}
	var skip skipError
	switch {
	case err == nil:
	case errors.As(err, &skip):
		res.Status, res.Detail = Skip, skip.reason
	default:
		res.Status, res.Detail = Fail, oneLine(err.Error())
	}
	s.rep.Results = append(s.rep.Results, res)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// runTests launches the target once for the tiers that share a plugin and
// runs every check as a subtest.
func runTests(t *testing.T, tg *target, h Harness) {
	t.Helper()
	c, err := tg.launch(t.Context())
	if err != nil {
		t.Fatalf("plugintest: launching %s: %v", tg.name, err)
	}
	t.Cleanup(c.Kill)
	s := &suite{h: h, target: tg, client: c}
	s.all(testSink{t})
}
