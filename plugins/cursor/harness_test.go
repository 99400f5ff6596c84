package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests drive the cursor plugin the way a harness does: the built
// avenor binary runs the built plugin (found on AVENOR_PLUGIN_PATH), which
// runs the fake ACP agent (sdk/acp/internal/fakeagent) installed as
// "agent" on PATH with FAKEACP_PROFILE=cursor, in isolated HOME/XDG dirs.

var bins struct {
	avenor, pluginDir, agentDir string
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "avenor-cursor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := build(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries under test:", err)
		return 1
	}
	return m.Run()
}

// build builds avenor (or takes it from AVENOR_TEST_BIN), this plugin and
// the fake agent.
func build(tmp string) error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	bins.avenor = filepath.Join(tmp, "avenor-alone", "avenor")
	bins.pluginDir = filepath.Join(tmp, "plugins")
	bins.agentDir = filepath.Join(tmp, "agent-bin")
	steps := []struct {
		dir  string
		args []string
	}{
		{".", []string{"build", "-o", filepath.Join(bins.pluginDir, "avenor-plugin-cursor"), "."}},
		{filepath.Join(root, "sdk"), []string{"build", "-o", filepath.Join(bins.agentDir, "agent"), "./acp/internal/fakeagent"}},
	}
	if src := os.Getenv("AVENOR_TEST_BIN"); src != "" {
		if err := os.MkdirAll(filepath.Dir(bins.avenor), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(filepath.Join(src, "avenor"), bins.avenor); err != nil {
			return err
		}
	} else {
		steps = append(steps, struct {
			dir  string
			args []string
		}{root, []string{"build", "-o", bins.avenor, "./cmd/avenor"}})
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", s.args...)
			cmd.Dir = s.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(s.args, " "), s.dir, err, out)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// env is one test's isolated world.
type env struct {
	t     *testing.T
	dir   string // the agent's working directory
	home  string
	state string
	log   string // FAKEACP_LOG
	extra []string
	path  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	tmp := t.TempDir()
	e := &env{t: t, dir: filepath.Join(tmp, "ws"), home: filepath.Join(tmp, "home"), state: filepath.Join(tmp, "state"),
		log: filepath.Join(tmp, "agent.log"), path: bins.agentDir + ":/usr/bin:/bin"}
	for _, d := range []string{e.dir, e.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) environ() []string {
	return append([]string{
		"HOME=" + e.home, "XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"), "XDG_DATA_HOME=" + filepath.Join(e.home, ".local/share"),
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local/state"), "XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"PATH=" + e.path, "AVENOR_PLUGIN_PATH=" + bins.pluginDir, "TMPDIR=" + os.TempDir(),
		"FAKEACP_PROFILE=cursor", "FAKEACP_STATE=" + e.state, "FAKEACP_LOG=" + e.log,
	}, e.extra...)
}

// run is one finished avenor run.
type run struct {
	exit     int
	stderr   string
	events   []map[string]any
	sentinel string
}

func (r run) final() string {
	for _, ev := range r.events {
		if ev["event"] == "session.end" {
			s, _ := ev["final_output"].(string)
			return s
		}
	}
	return ""
}

func (r run) of(typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range r.events {
		if ev["event"] == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (r run) sessionID() string {
	for _, l := range strings.Split(r.sentinel, "\n") {
		if v, ok := strings.CutPrefix(l, "SESSION="); ok {
			return v
		}
	}
	return ""
}

// avenor runs avenor with args; during runs during the run (it may answer
// permission files or interrupt the process).
func (e *env) avenor(during func(cmd *exec.Cmd, events string), args ...string) run {
	e.t.Helper()
	tmp := e.t.TempDir()
	events, sentinel := filepath.Join(tmp, "events.ndjson"), filepath.Join(tmp, "run.done")
	args = append([]string{"--backend", "cursor-acp", "--dir", e.dir, "--on-event", events, "--sentinel-file", sentinel, "--timeout", "60s"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.avenor, args...)
	cmd.Env = e.environ()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	if during != nil {
		go func() { defer close(done); during(cmd, events) }()
	} else {
		close(done)
	}
	err := cmd.Wait()
	<-done
	r := run{stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.exit = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	r.events = readEvents(e.t, events)
	data, _ := os.ReadFile(sentinel)
	r.sentinel = string(data)
	return r
}

func readEvents(t *testing.T, path string) []map[string]any {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event log line %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// waitFor polls until cond holds or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("timed out waiting for %s", what)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// answerFile waits for the permission file handler's request at base and
// answers it with the option pick chooses; it returns the request.
func answerFile(t *testing.T, base string, pick func(req map[string]any) string) map[string]any {
	var req map[string]any
	waitFor(t, 30*time.Second, base+".req", func() bool {
		data, err := os.ReadFile(base + ".req")
		return err == nil && json.Unmarshal(data, &req) == nil
	})
	if req == nil {
		return nil
	}
	resp, _ := json.Marshal(map[string]any{"outcome": "selected", "option_id": pick(req)})
	if err := os.WriteFile(base+".req.response.tmp", resp, 0o600); err != nil {
		t.Error(err)
	}
	if err := os.Rename(base+".req.response.tmp", base+".req.response"); err != nil {
		t.Error(err)
	}
	return req
}

// agentLog is what the fake agent received.
func (e *env) agentLog() []map[string]any {
	return readEvents(e.t, e.log)
}

// agentsAlive lists processes still running the fake agent of this test.
func agentsAlive() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.HasPrefix(string(data), filepath.Join(bins.agentDir, "agent")) {
			stat, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
			if !strings.Contains(string(stat), ") Z ") {
				out = append(out, ent.Name())
			}
		}
	}
	return out
}

var _ = syscall.SIGINT
