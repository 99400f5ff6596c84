package hosttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// bins locates the binaries under test, set up once by TestMain.
var bins struct {
	// avenor is a copy of the avenor binary alone in its directory, so that
	// "next to avenor" discovery finds no plugin: every test chooses the
	// plugins it sees through AVENOR_PLUGIN_PATH.
	avenor string
	// pluginDir holds avenor-plugin-echo and avenor-plugin-scripted only.
	pluginDir string
}

// basePATH holds the tools the scripted plugin runs (sleep, sh) and, unlike
// /usr/local/bin, never an installed avenor plugin.
const basePATH = "/usr/bin:/bin"

func TestMain(m *testing.M) {
	if path := os.Getenv(envSquat); path != "" {
		os.Exit(squat(path)) // this binary, re-run as another uid
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "avenor-hosttest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hosttest:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := setupBinaries(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "hosttest:", err)
		return 1
	}
	return m.Run()
}

// setupBinaries finds (AVENOR_TEST_BIN) or builds the binaries, then lays
// them out under tmp: avenor alone in one directory, the two plugins in
// another.
func setupBinaries(tmp string) error {
	src := os.Getenv("AVENOR_TEST_BIN")
	if src == "" {
		src = filepath.Join(tmp, "build")
		if err := buildBinaries(src); err != nil {
			return err
		}
	}
	src, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	bins.avenor = filepath.Join(tmp, "avenor-alone", "avenor")
	bins.pluginDir = filepath.Join(tmp, "plugins")
	if err := os.MkdirAll(filepath.Dir(bins.avenor), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(bins.pluginDir, 0o755); err != nil {
		return err
	}
	if err := copyExecutable(filepath.Join(src, "avenor"), bins.avenor); err != nil {
		return fmt.Errorf("AVENOR_TEST_BIN=%s: %w", src, err)
	}
	for _, name := range []string{"avenor-plugin-echo", "avenor-plugin-scripted"} {
		p := filepath.Join(src, name)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("AVENOR_TEST_BIN=%s: %w", src, err)
		}
		if err := os.Symlink(p, filepath.Join(bins.pluginDir, name)); err != nil {
			return err
		}
	}
	return nil
}

// buildBinaries builds avenor and the two test plugins into dir, from the
// repository this package lives in.
func buildBinaries(dir string) error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	builds := []struct {
		dir  string
		args []string
	}{
		{root, []string{"build", "-o", filepath.Join(dir, "avenor"), "./cmd/avenor"}},
		{filepath.Join(root, "sdk"), []string{"build", "-o", dir + string(os.PathSeparator),
			"./examples/echo/cmd/avenor-plugin-echo", "./plugintest/scripted/cmd/avenor-plugin-scripted"}},
	}
	errs := make([]error, len(builds))
	var wg sync.WaitGroup
	for i, b := range builds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", b.args...)
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(b.args, " "), b.dir, err, out)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// world is one isolated environment for avenor runs: its own HOME, XDG
// directories, TMPDIR and working directory.
type world struct {
	t                         *testing.T
	root                      string
	home, config, state, data string
	tmp                       string // TMPDIR: go-plugin puts its sockets here
	work                      string // the process's working directory
	env                       []string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, root: root,
		home: filepath.Join(root, "home"), config: filepath.Join(root, "config"), state: filepath.Join(root, "state"),
		data: filepath.Join(root, "data"), work: filepath.Join(root, "work")}
	for _, d := range []string{w.home, w.config, w.state, w.data, w.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Unix socket paths are short (108 bytes): a TMPDIR under a long test
	// name could overflow them, so it gets a short name of its own.
	tmp, err := os.MkdirTemp("", "avt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	w.tmp = tmp
	w.env = []string{
		"PATH=" + basePATH,
		"HOME=" + w.home,
		"XDG_CONFIG_HOME=" + w.config,
		"XDG_STATE_HOME=" + w.state,
		"XDG_DATA_HOME=" + w.data,
		"TMPDIR=" + w.tmp,
		"AVENOR_PLUGIN_PATH=" + bins.pluginDir,
	}
	return w
}

// path is a file under the world's root.
func (w *world) path(name string) string { return filepath.Join(w.root, name) }

// writeFile writes content to a path under the root, creating directories.
func (w *world) writeFile(name, content string) string {
	w.t.Helper()
	p := w.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// userConfig writes $XDG_CONFIG_HOME/avenor/config.toml.
func (w *world) userConfig(content string) {
	w.t.Helper()
	w.writeFile(filepath.Join("config", "avenor", "config.toml"), content)
}

// result is how one avenor process ended.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout: %q\nstderr: %q", r.code, r.elapsed.Round(time.Millisecond), r.stdout, r.stderr)
}

// proc is a running avenor.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	started time.Time
	once    sync.Once
	res     result
}

// runGuard bounds every avenor process: no test waits longer on a hung run.
// The reliability suite raises it: a supervisor lives through a whole crash
// matrix or soak, each step with its own, shorter bound.
var runGuard = 45 * time.Second

// start starts avenor with args; extraEnv entries override the world's.
func (w *world) start(extraEnv []string, args ...string) *proc {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	p := &proc{t: w.t, cancel: cancel}
	p.cmd = exec.CommandContext(ctx, bins.avenor, args...)
	p.cmd.Dir = w.work
	p.cmd.Env = append(append([]string{}, w.env...), extraEnv...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("starting avenor: %v", err)
	}
	// A test that stopped early must not leave avenor running.
	w.t.Cleanup(func() { cancel(); p.wait() })
	return p
}

// wait waits for the process to end (once) and returns its result.
func (p *proc) wait() result {
	p.once.Do(func() {
		defer p.cancel()
		err := p.cmd.Wait()
		p.res = result{code: p.cmd.ProcessState.ExitCode(), stdout: p.stdout.String(), stderr: p.stderr.String(),
			elapsed: time.Since(p.started)}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.t.Errorf("waiting for avenor: %v", err)
		}
		if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			p.res.code = 128 + int(st.Signal())
		}
	})
	return p.res
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("sending %v to avenor: %v", sig, err)
	}
}

// run runs avenor to its end.
func (w *world) run(args ...string) result {
	w.t.Helper()
	return w.start(nil, args...).wait()
}

// runEnv runs avenor to its end with extra environment entries.
func (w *world) runEnv(extraEnv []string, args ...string) result {
	w.t.Helper()
	return w.start(extraEnv, args...).wait()
}

// event is one line of the --on-event log.
type event map[string]any

func (e event) name() string { s, _ := e["event"].(string); return s }

func (e event) str(key string) string { s, _ := e[key].(string); return s }

func (e event) num(key string) (float64, bool) { f, ok := e[key].(float64); return f, ok }

// readEvents reads an NDJSON log. Every line must be one JSON object written
// exactly as encoding/json writes a map (compact, keys sorted, <>& escaped:
// docs/events.md#the-envelope).
func readEvents(t *testing.T, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the event log: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("event log does not end with a newline: %q", tail(string(data), 200))
	}
	var evs []event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("event log line %d is not a JSON object: %v\n%s", n, err, line)
		}
		canon, _ := json.Marshal(ev)
		if !bytes.Equal(canon, line) {
			t.Errorf("event log line %d is not in encoding/json's form (sorted keys, HTML-escaped):\n got %s\nwant %s", n, line, canon)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// checkEnvelope checks the stamped fields of every event (docs/events.md#the-envelope): seq
// 1..n without gaps, run_id, ts in Unix ms within the run and never going
// back.
func checkEnvelope(t *testing.T, evs []event, runID string, from, to time.Time) {
	t.Helper()
	lo, hi := float64(from.Add(-time.Second).UnixMilli()), float64(to.Add(time.Second).UnixMilli())
	prevTS := 0.0
	for i, ev := range evs {
		if seq, _ := ev.num("seq"); seq != float64(i+1) {
			t.Errorf("event %d (%s): seq = %v, want %d", i+1, ev.name(), ev["seq"], i+1)
		}
		if got := ev.str("run_id"); got != runID {
			t.Errorf("event %d (%s): run_id = %q, want %q", i+1, ev.name(), got, runID)
		}
		ts, ok := ev.num("ts")
		switch {
		case !ok:
			t.Errorf("event %d (%s): ts = %v, want a number", i+1, ev.name(), ev["ts"])
		case ts < lo || ts > hi:
			t.Errorf("event %d (%s): ts = %.0f, not Unix ms within the run [%.0f, %.0f]", i+1, ev.name(), ts, lo, hi)
		case ts < prevTS:
			t.Errorf("event %d (%s): ts %.0f goes back from %.0f", i+1, ev.name(), ts, prevTS)
		}
		prevTS = ts
		if ev.name() == "" {
			t.Errorf("event %d has no event name: %v", i+1, ev)
		}
	}
}

// names lists event names, leaving out those in skip.
func names(evs []event, skip ...string) []string {
	var out []string
next:
	for _, ev := range evs {
		for _, s := range skip {
			if ev.name() == s {
				continue next
			}
		}
		out = append(out, ev.name())
	}
	return out
}

// only returns the events named name.
func only(evs []event, name string) []event {
	var out []event
	for _, ev := range evs {
		if ev.name() == name {
			out = append(out, ev)
		}
	}
	return out
}

// lastSessionEnd fails unless the log ends with a session.end, and returns it.
func lastSessionEnd(t *testing.T, evs []event) event {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].name() != "session.end" {
		t.Fatalf("the last event is not session.end: %v", names(evs))
	}
	return evs[len(evs)-1]
}

// sessionOf is the session id of the first session.start.
func sessionOf(t *testing.T, evs []event) string {
	t.Helper()
	starts := only(evs, "session.start")
	if len(starts) == 0 {
		t.Fatalf("no session.start in %v", names(evs))
	}
	id := starts[0].str("session_id")
	if id == "" {
		t.Fatalf("session.start has no session_id: %v", starts[0])
	}
	return id
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(b)
}

// sentinelBytes is the sentinel the contract (docs/run.md#sentinel) prescribes.
func sentinelBytes(status, session, stop string, exitCode int, runID string) string {
	s := fmt.Sprintf("%s\nSESSION=%s\nSTOP_REASON=%s\n", status, session, stop)
	if status == "KILLED" || status == "FAILED" {
		s += fmt.Sprintf("EXIT_CODE=%d\n", exitCode)
	}
	if runID != "" {
		s += "RUN=" + runID + "\n"
	}
	return s
}

// validationSentinel is the sentinel of a run refused before it started, given
// the refusal's stderr text after "avenor: ": a loop or team config that fails
// to load says STOP_REASON=error (docs/run.md#sentinel); every other refusal derives its stop
// reason from exit 1, exit_1 (docs/run.md#lifecycle).
func validationSentinel(msg, runID string) string {
	stop := "exit_1"
	if strings.HasPrefix(msg, "load loop config:") || strings.HasPrefix(msg, "load team config:") {
		stop = "error"
	}
	return "FAILED\nSESSION=\nSTOP_REASON=" + stop + "\nEXIT_CODE=1\nRUN=" + runID + "\n"
}

func checkSentinel(t *testing.T, path, want string) {
	t.Helper()
	if got := readFile(t, path); got != want {
		t.Errorf("sentinel:\n got %q\nwant %q", got, want)
	}
}

// dialControl connects to the control socket a run or supervisor is
// bringing up, waiting up to 10 s for it; the client closes with the test.
func dialControl(t *testing.T, ctx context.Context, sock string) *client.Client {
	t.Helper()
	var c *client.Client
	if !waitFor(10*time.Second, func() bool {
		var err error
		c, err = client.Dial(ctx, sock)
		return err == nil
	}) {
		t.Fatal("control socket never came up")
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitFor polls until cond holds or d elapses, and says whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForLog waits until the event log holds a line containing substr.
func waitForLog(t *testing.T, path, substr string, d time.Duration) {
	t.Helper()
	if !waitFor(d, func() bool {
		b, _ := os.ReadFile(path)
		return bytes.Contains(b, []byte(substr))
	}) {
		b, _ := os.ReadFile(path)
		t.Fatalf("no %q in the event log within %v:\n%s", substr, d, b)
	}
}

// readPidFile waits for a pid file (SCRIPTED_CHILD_PIDFILE) to be written.
func readPidFile(t *testing.T, path string) int {
	t.Helper()
	pid := 0
	if !waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("pid file %s was not written", path)
	}
	return pid
}

// processGone says whether pid has exited. A zombie counts as gone: this
// container's PID 1 does not reap orphans.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return procState(pid) == "Z"
}

// procState is the state letter of /proc/<pid>/stat, "" when unreadable.
func procState(pid int) string {
	if f := statFields(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

// statFields are the fields of /proc/<pid>/stat after the command name
// (which is in parentheses and may hold spaces): the state first, then
// the parent; nil when unread.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// requireGone fails unless pid exits within d.
func requireGone(t *testing.T, what string, pid int, d time.Duration) {
	t.Helper()
	if !waitFor(d, func() bool { return processGone(pid) }) {
		t.Errorf("%s (pid %d) is still running %v later (state %q)", what, pid, d, procState(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL) // do not leak it into other tests
	}
}

// childrenOf lists the live processes whose parent is ppid and whose
// command line contains substr.
func childrenOf(ppid int, substr string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, ok := ppidOf(pid); !ok || parent != ppid {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, []byte(substr)) {
			out = append(out, pid)
		}
	}
	return out
}

// badRunCase is avenor run refused for bad input: flags, the user config
// and the environment that must end it before the prompt runs.
type badRunCase struct {
	name   string
	flags  []string
	env    []string
	config string
	// want is in stderr.
	want string
	// code is 1, or 2 for a value the flag parser cannot take (the
	// contract's decision 10).
	code int
}

// checkBadRun runs tc's scripted run (run id runID) and checks the
// refusal: the exit code, stderr naming tc.want, a FAILED sentinel with
// that exit code, and the prompt never ran.
func checkBadRun(t *testing.T, runID string, tc badRunCase) {
	t.Helper()
	w := newWorld(t)
	if tc.config != "" {
		w.userConfig(tc.config)
	}
	sent := w.path("run.done")
	args := append([]string{"--backend", "scripted", "--prompt", "say hi", "--sentinel-file", sent, "--run-id", runID}, tc.flags...)
	res := w.runEnv(tc.env, args...)
	code := max(tc.code, 1)
	if res.code != code {
		t.Fatalf("want exit %d; got %v", code, res)
	}
	if !strings.Contains(res.stderr, tc.want) {
		t.Errorf("stderr %q lacks %q", res.stderr, tc.want)
	}
	if body := readFile(t, sent); !strings.HasPrefix(body, "FAILED\n") || !strings.Contains(body, fmt.Sprintf("EXIT_CODE=%d\n", code)) {
		t.Errorf("sentinel %q, want FAILED with exit %d", body, code)
	}
	if strings.Contains(res.stdout+res.stderr, "say hi") || strings.Contains(res.stdout, "hi") {
		t.Errorf("the prompt ran: %v", res)
	}
}

// ppidOf is pid's parent, from /proc/<pid>/stat; false when unread.
func ppidOf(pid int) (int, bool) {
	f := statFields(pid)
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
