//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// bins locates what the tests run, set up once by TestMain.
var bins struct {
	dir      string // the built avenor and its plugins (AVENOR_TEST_BIN)
	avenor   string
	opencode string // the opencode CLI (npm's .bin launcher)
	gemini   string // the gemini CLI
	nodeDir  string // the directory of node (gemini is a node script)
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir := os.Getenv("AVENOR_TEST_BIN")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "e2e: AVENOR_TEST_BIN unset: running make build")
		cmd := exec.Command("make", "-C", "..", "build")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: make build:", err)
			return 1
		}
		dir = "../bin"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	bins.dir, bins.avenor = dir, filepath.Join(dir, "avenor")
	if _, err := os.Stat(bins.avenor); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: AVENOR_TEST_BIN=%s: %v\n", dir, err)
		return 1
	}
	bins.opencode, bins.gemini = os.Getenv("AVENOR_E2E_OPENCODE"), os.Getenv("AVENOR_E2E_GEMINI")
	if bins.opencode == "" || bins.gemini == "" {
		code, err := install()
		if code == 3 {
			fmt.Fprintln(os.Stderr, skipBanner(err.Error()))
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: node is not on PATH (gemini-cli needs it):", err)
		return 1
	}
	bins.nodeDir = filepath.Dir(node)
	return m.Run()
}

// install runs install.sh and reads the CLI paths it prints. Exit code 3
// means the npm registry is unreachable.
func install() (int, error) {
	cmd := exec.Command("./install.sh")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		code := 1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return code, fmt.Errorf("install.sh: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "AVENOR_E2E_OPENCODE":
			bins.opencode = v
		case "AVENOR_E2E_GEMINI":
			bins.gemini = v
		}
	}
	if bins.opencode == "" || bins.gemini == "" {
		return 1, fmt.Errorf("install.sh printed no CLI paths:\n%s", out)
	}
	return 0, nil
}

func skipBanner(reason string) string {
	line := strings.Repeat("!", 72)
	return fmt.Sprintf("%s\n!!! SKIP: real-runtime e2e tests NOT RUN\n!!! %s\n%s", line, reason, line)
}

// world is one isolated environment: its own HOME, XDG directories, TMPDIR,
// working directory, and a fake LLM the runtime is configured to use.
type world struct {
	t                                *testing.T
	rt                               *runtimeSpec
	llm                              *fakellm.Server
	root                             string
	home, config, data, cache, state string
	tmp                              string // TMPDIR (short: go-plugin puts sockets there)
	work                             string // the agent's directory (--dir)
	env                              []string
}

func newWorld(t *testing.T, rt *runtimeSpec, cfg fakellm.Config) *world {
	t.Helper()
	root := t.TempDir()
	w := &world{t: t, rt: rt, root: root,
		home: filepath.Join(root, "home"), config: filepath.Join(root, "config"), data: filepath.Join(root, "data"),
		cache: filepath.Join(root, "cache"), state: filepath.Join(root, "state"), work: filepath.Join(root, "work")}
	for _, d := range []string{w.home, w.config, w.data, w.cache, w.state, w.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp, err := os.MkdirTemp("", "ave2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	w.tmp = tmp
	w.llm = fakellm.Start(t, cfg)
	w.env = []string{
		"PATH=" + strings.Join([]string{filepath.Dir(bins.opencode), filepath.Dir(bins.gemini), bins.nodeDir, "/usr/bin", "/bin"}, ":"),
		"HOME=" + w.home,
		"XDG_CONFIG_HOME=" + w.config,
		"XDG_DATA_HOME=" + w.data,
		"XDG_CACHE_HOME=" + w.cache,
		"XDG_STATE_HOME=" + w.state,
		"TMPDIR=" + w.tmp,
		"AVENOR_PLUGIN_PATH=" + bins.dir,
		"LANG=C.UTF-8",
		// opencode runs `npm install @opencode-ai/plugin` into its config
		// directory at start, even with --pure: this keeps it off the real
		// registry (the fake server answers 404 at once).
		"npm_config_registry=" + w.llm.URL + npmRegistryPath,
	}
	rt.setup(w)
	return w
}

// npmRegistryPath is where the runtimes' npm registry points: the fake
// server, which has no packages.
const npmRegistryPath = "/npm-registry/"

func (w *world) path(name string) string { return filepath.Join(w.root, name) }

func (w *world) writeFile(path, content string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// result is how one process ended.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout: %s\nstderr: %s", r.code, r.elapsed.Round(time.Millisecond),
		tail(r.stdout, 2000), tail(r.stderr, 4000))
}

// proc is a running avenor. While it runs, its descendants (plugin,
// runtime CLI and their helpers) are sampled, so that the test can check
// none survives it.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	started time.Time
	res     result
	exited  chan struct{} // closed once res is set

	mu      sync.Mutex
	seen    map[procID]string // descendants ever seen → command line
	stopped chan struct{}
}

// procID is a pid with its start time, so a reused pid is not mistaken for
// the process seen before.
type procID struct {
	pid   int
	start string
}

// runGuard bounds every avenor process.
const runGuard = 3 * time.Minute

// start starts avenor with args.
func (w *world) start(args ...string) *proc {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runGuard)
	p := &proc{t: w.t, cancel: cancel, seen: map[procID]string{}, stopped: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, bins.avenor, args...)
	p.cmd.Dir = w.work
	p.cmd.Env = w.env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 10 * time.Second
	p.started = time.Now()
	w.t.Logf("avenor %s", strings.Join(args, " "))
	if err := p.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("starting avenor: %v", err)
	}
	go p.sample()
	go p.reap()
	w.t.Cleanup(func() { cancel(); p.wait() })
	return p
}

func (p *proc) sample() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		for id, cmdline := range descendants(p.cmd.Process.Pid) {
			p.mu.Lock()
			p.seen[id] = cmdline
			p.mu.Unlock()
		}
		select {
		case <-p.stopped:
			return
		case <-t.C:
		}
	}
}

// reap waits for avenor to end and records the result; started with it.
func (p *proc) reap() {
	err := p.cmd.Wait()
	close(p.stopped)
	p.res = result{code: p.cmd.ProcessState.ExitCode(), stdout: p.stdout.String(), stderr: p.stderr.String(),
		elapsed: time.Since(p.started)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.res.stderr += "\n(waiting for avenor: " + err.Error() + ")"
	}
	if st, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		p.res.code = 128 + int(st.Signal())
	}
	p.cancel()
	close(p.exited)
}

// wait waits for avenor to end and returns its result.
func (p *proc) wait() result {
	<-p.exited
	return p.res
}

// ended says whether avenor has exited.
func (p *proc) ended() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// checkNoLeftovers fails the test if a descendant of avenor outlives it by
// more than a few seconds; survivors are killed.
func (p *proc) checkNoLeftovers() {
	p.t.Helper()
	p.mu.Lock()
	seen := make(map[procID]string, len(p.seen))
	for k, v := range p.seen {
		seen[k] = v
	}
	p.mu.Unlock()
	if len(seen) == 0 {
		p.t.Errorf("no descendant of avenor was ever seen: the sampler or the run is broken")
	}
	alive := func() []procID {
		var out []procID
		for id := range seen {
			if procAlive(id) {
				out = append(out, id)
			}
		}
		return out
	}
	if !waitFor(5*time.Second, func() bool { return len(alive()) == 0 }) {
		for _, id := range alive() {
			p.t.Errorf("leftover process %d outlived avenor: %s", id.pid, seen[id])
			_ = syscall.Kill(id.pid, syscall.SIGKILL)
		}
	}
}

// descendants lists the living descendants of pid, from /proc.
func descendants(root int) map[procID]string {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	ids := map[int]procID{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, state, ok := statOf(pid)
		if !ok || state == "Z" {
			continue
		}
		parent[pid] = ppid
		ids[pid] = procID{pid, start}
	}
	out := map[procID]string{}
	for pid := range parent {
		for p, hops := parent[pid], 0; p != 0 && hops < 64; p, hops = parent[p], hops+1 {
			if p == root {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				out[ids[pid]] = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
				break
			}
		}
	}
	return out
}

// statOf reads ppid, start time and state from /proc/<pid>/stat.
func statOf(pid int) (ppid int, start, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, "", "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], f[0], true
}

// procAlive says whether the process is still there (a zombie counts as
// gone: PID 1 of a container may not reap orphans).
func procAlive(id procID) bool {
	_, start, state, ok := statOf(id.pid)
	return ok && start == id.start && state != "Z"
}

// event is one line of the --on-event log.
type event map[string]any

func (e event) name() string          { s, _ := e["event"].(string); return s }
func (e event) str(key string) string { s, _ := e[key].(string); return s }

func readEvents(t *testing.T, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the event log: %v", err)
	}
	var evs []event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event log line %d is not a JSON object: %v\n%s", n, err, sc.Bytes())
		}
		evs = append(evs, ev)
	}
	return evs
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.name()
	}
	return out
}

func only(evs []event, name string) []event {
	var out []event
	for _, ev := range evs {
		if ev.name() == name {
			out = append(out, ev)
		}
	}
	return out
}

// sentinel is the parsed sentinel file (docs/run.md#sentinel).
type sentinel struct {
	raw     string
	status  string
	fields  map[string]string
	session string
}

func readSentinel(t *testing.T, path string) sentinel {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the sentinel: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	s := sentinel{raw: string(b), status: lines[0], fields: map[string]string{}}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, "=")
		s.fields[k] = v
	}
	s.session = s.fields["SESSION"]
	return s
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }
