package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pluginCLIBins holds the binaries the `avenor plugin` tests drive, built
// once per test process into a fixed directory (rebuilt every run):
//
//	avenor/avenor                       alone, so "next to avenor" finds nothing
//	echo-1.0.0/avenor-plugin-echo       echo built with Version 1.0.0
//	echo-1.1.0/avenor-plugin-echo       and 1.1.0
//	echo-dev/avenor-plugin-echo         and its default version
//	scripted/avenor-plugin-scripted
//	broken/avenor-plugin-broken         claims resume and cancel, delivers neither
//	major99/avenor-plugin-major99       speaks only plugin protocol 99
//
// TestMain removes the plugin binaries pluginBins built.
func TestMain(m *testing.M) {
	code := m.Run()
	if pluginCLIBins.dir != "" {
		os.RemoveAll(pluginCLIBins.dir)
	}
	os.Exit(code)
}

var pluginCLIBins struct {
	once sync.Once
	dir  string
	err  error
}

func pluginBins(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs avenor and plugin binaries")
	}
	b := &pluginCLIBins
	b.once.Do(func() {
		// A private directory per test binary: a fixed path was shared by
		// every concurrent `go test` of this package on the machine.
		if b.dir, b.err = os.MkdirTemp("", "avenor-plugin-cli-"); b.err != nil {
			return
		}
		const echoVersion = "-X github.com/avenor-go/avenor/sdk/examples/echo.Version="
		builds := []struct{ wd, out, ldflags, pkg string }{
			{".", "avenor/avenor", "", "."},
			{"../../sdk", "echo-1.0.0/avenor-plugin-echo", echoVersion + "1.0.0", "./examples/echo/cmd/avenor-plugin-echo"},
			{"../../sdk", "echo-1.1.0/avenor-plugin-echo", echoVersion + "1.1.0", "./examples/echo/cmd/avenor-plugin-echo"},
			{"../../sdk", "echo-dev/avenor-plugin-echo", "", "./examples/echo/cmd/avenor-plugin-echo"},
			{"../../sdk", "scripted/avenor-plugin-scripted", "", "./plugintest/scripted/cmd/avenor-plugin-scripted"},
			{"../../sdk", "broken/avenor-plugin-broken", "", "./plugintest/internal/broken/cmd/avenor-plugin-broken"},
			{"../../sdk", "major99/avenor-plugin-major99", "", "./plugintest/internal/major99"},
		}
		if src := os.Getenv("AVENOR_TEST_BIN"); src != "" {
			// `make test` built avenor already; copy it so it sits alone.
			if b.err = copyFile(filepath.Join(src, "avenor"), filepath.Join(b.dir, "avenor", "avenor")); b.err != nil {
				return
			}
			builds = builds[1:]
		}
		errs := make([]error, len(builds))
		var wg sync.WaitGroup
		for i, bd := range builds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command("go", "build", "-ldflags", bd.ldflags, "-o", filepath.Join(b.dir, bd.out), bd.pkg)
				cmd.Dir = bd.wd
				if out, err := cmd.CombinedOutput(); err != nil {
					errs[i] = fmt.Errorf("go build %s: %v\n%s", bd.pkg, err, out)
				}
			}()
		}
		wg.Wait()
		b.err = errors.Join(errs...)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.dir
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// pluginWorld is an isolated user: its own HOME and XDG directories, a
// short TMPDIR (go-plugin's sockets), PATH without any plugin, and no
// AVENOR_PLUGIN_PATH unless a test sets one.
type pluginWorld struct {
	t    *testing.T
	bins string
	root string
	env  []string
}

func newPluginWorld(t *testing.T) *pluginWorld {
	t.Helper()
	w := &pluginWorld{t: t, bins: pluginBins(t), root: t.TempDir()}
	tmp, err := os.MkdirTemp("", "avp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	w.env = []string{
		"HOME=" + w.path("home"), "XDG_CONFIG_HOME=" + w.path("config"), "XDG_DATA_HOME=" + w.path("data"),
		"XDG_STATE_HOME=" + w.path("state"), "TMPDIR=" + tmp, "PATH=/usr/bin:/bin",
	}
	return w
}

func (w *pluginWorld) path(elem ...string) string {
	return filepath.Join(append([]string{w.root}, elem...)...)
}

func (w *pluginWorld) bin(elem ...string) string {
	return filepath.Join(append([]string{w.bins}, elem...)...)
}

func (w *pluginWorld) mkdir(elem ...string) string {
	w.t.Helper()
	d := w.path(elem...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		w.t.Fatal(err)
	}
	return d
}

type cliResult struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// avenor runs avenor in dir with extra environment.
func (w *pluginWorld) avenor(dir string, extra []string, args ...string) cliResult {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin("avenor", "avenor"), args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, w.env...), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		w.t.Fatalf("avenor %v: %v", args, err)
	}
	return r
}

// ok runs avenor and fails the test unless it exits 0.
func (w *pluginWorld) ok(dir string, args ...string) cliResult {
	w.t.Helper()
	r := w.avenor(dir, nil, args...)
	if r.code != 0 {
		w.t.Fatalf("avenor %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// run runs `avenor --backend <backend> --prompt hi` in dir and returns
// its session.start event (nil when there is none).
func (w *pluginWorld) run(dir string, extra []string, backend string, more ...string) (cliResult, map[string]any) {
	w.t.Helper()
	events := filepath.Join(w.mkdir("events"), fmt.Sprintf("%d.ndjson", time.Now().UnixNano()))
	args := append([]string{"--backend", backend, "--prompt", "hi", "--on-event", events}, more...)
	r := w.avenor(dir, extra, args...)
	f, err := os.Open(events)
	if err != nil {
		return r, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev["event"] == "session.start" {
			return r, ev
		}
	}
	return r, nil
}

// pluginVersionOf runs echo in dir and returns the plugin_version of its
// session.start.
func (w *pluginWorld) pluginVersionOf(dir string, extra []string, more ...string) string {
	w.t.Helper()
	r, start := w.run(dir, extra, "echo", more...)
	if r.code != 0 || start == nil {
		w.t.Fatalf("run in %s: exit %d, session.start %v\nstderr: %s", dir, r.code, start, r.stderr)
	}
	if start["plugin"] != "echo" || start["protocol_version"] != float64(1) {
		w.t.Errorf("session.start = %v", start)
	}
	v, _ := start["plugin_version"].(string)
	return v
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}

// TestPinsFollowTheProject: two echo versions installed side by side;
// project A pins 1.0.0, project B 1.1.0; runs in each use their pin
// (session.start's plugin_version), unpinned runs the highest, a pin beats
// AVENOR_PLUGIN_PATH, and unpinning goes back to the search order.
func TestPinsFollowTheProject(t *testing.T) {
	w := newPluginWorld(t)
	home := w.mkdir("work")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		r := w.ok(home, "plugin", "install", w.bin("echo-"+v, "avenor-plugin-echo"))
		mustContain(t, "install", r.stdout, "installed echo "+v+" at "+w.path("data", "avenor", "plugins", "echo", v, "avenor-plugin-echo"))
	}
	a, b, c := w.mkdir("a"), w.mkdir("b"), w.mkdir("c")
	r := w.ok(a, "plugin", "use", "echo@1.0.0")
	mustContain(t, "use in A", r.stdout, "created project "+a, "pinned echo 1.0.0 (sha256:", filepath.Join(a, ".avenor", "plugins.lock"))
	w.ok(b, "plugin", "use", "echo@1.1.0")

	lock, err := os.ReadFile(filepath.Join(a, ".avenor", "plugins.lock"))
	if err != nil {
		t.Fatal(err)
	}
	wantLock := `# avenor plugin lock file: the exact plugin binaries this project runs.
# Written by "avenor plugin use" and "avenor plugin unpin"; commit it.
# avenor checks each binary against its hash before it runs it.

[plugins.echo]
version = "1.0.0"
hash = "` + sha256File(t, w.bin("echo-1.0.0", "avenor-plugin-echo")) + `"
`
	if string(lock) != wantLock {
		t.Errorf("lock file of A:\n%s\nwant:\n%s", lock, wantLock)
	}

	sub := w.mkdir("a", "deep", "sub") // the nearest project upwards
	for _, tc := range []struct {
		name, dir string
		extra     []string
		more      []string
		want      string
	}{
		{"A pins 1.0.0", a, nil, nil, "1.0.0"},
		{"below A", sub, nil, nil, "1.0.0"},
		{"B pins 1.1.0", b, nil, nil, "1.1.0"},
		{"unpinned runs the highest", c, nil, nil, "1.1.0"},
		{"--dir names the project", c, nil, []string{"--dir", a}, "1.0.0"},
		{"a pin beats AVENOR_PLUGIN_PATH", a, []string{"AVENOR_PLUGIN_PATH=" + w.bin("echo-dev")}, nil, "1.0.0"},
		{"unpinned, AVENOR_PLUGIN_PATH comes first", c, []string{"AVENOR_PLUGIN_PATH=" + w.bin("echo-dev")}, nil, "0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := w.pluginVersionOf(tc.dir, tc.extra, tc.more...); got != tc.want {
				t.Errorf("plugin_version = %q, want %q", got, tc.want)
			}
		})
	}

	// plugin list says which binary and why.
	var list struct {
		Project, LockFile string `json:"-"`
		Plugins           []struct {
			Family    string
			Installed []struct{ Version, Path, Hash string }
			Pin       *struct{ Version, Hash string }
			Used      *struct {
				Path, Version, Source, Why string
				Pinned                     bool
			}
		}
	}
	r = w.ok(a, "plugin", "list", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("plugin list --json: %v\n%s", err, r.stdout)
	}
	if len(list.Plugins) != 1 || len(list.Plugins[0].Installed) != 2 || list.Plugins[0].Pin == nil || list.Plugins[0].Used == nil ||
		!list.Plugins[0].Used.Pinned || list.Plugins[0].Used.Version != "1.0.0" || list.Plugins[0].Used.Source != "pinned" {
		t.Errorf("plugin list --json in A:\n%s", r.stdout)
	}
	r = w.ok(c, "plugin", "list")
	mustContain(t, "plugin list in C", r.stdout, "no project here", "* highest installed version (unpinned)")
	r = w.ok(a, "plugin", "list")
	mustContain(t, "plugin list in A", r.stdout, "project "+a+": pins in", "1.0.0    * pinned in "+filepath.Join(a, ".avenor", "plugins.lock"))

	r = w.ok(a, "plugin", "unpin", "echo")
	mustContain(t, "unpin", r.stdout, "unpinned echo in ")
	if got := w.pluginVersionOf(a, nil); got != "1.1.0" {
		t.Errorf("after unpin, plugin_version = %q, want the highest, 1.1.0", got)
	}
	r = w.ok(a, "plugin", "unpin", "echo")
	mustContain(t, "second unpin", r.stdout, "echo was not pinned")
}

// TestBrokenPinsAreRefused: a tampered binary and a missing pinned version
// are clear errors naming the pin and the fix; nothing falls back.
func TestBrokenPinsAreRefused(t *testing.T) {
	w := newPluginWorld(t)
	proj := w.mkdir("project")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		w.ok(proj, "plugin", "install", w.bin("echo-"+v, "avenor-plugin-echo"))
	}
	w.ok(proj, "plugin", "use", "echo@1.0.0")
	lockFile := filepath.Join(proj, ".avenor", "plugins.lock")
	installed := w.path("data", "avenor", "plugins", "echo", "1.0.0", "avenor-plugin-echo")
	original, err := os.ReadFile(installed)
	if err != nil {
		t.Fatal(err)
	}
	dev := []string{"AVENOR_PLUGIN_PATH=" + w.bin("echo-dev")} // another echo is right there

	t.Run("tampered", func(t *testing.T) {
		if err := os.WriteFile(installed, append(append([]byte{}, original...), 'x'), 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(installed, original, 0o755)
		sentinel := filepath.Join(proj, "run.done")
		r, start := w.run(proj, dev, "echo", "--sentinel-file", sentinel)
		if r.code != 1 || start != nil {
			t.Fatalf("exit %d, session.start %v; want exit 1 and no session", r.code, start)
		}
		mustContain(t, "stderr", r.stderr, "plugin echo 1.0.0 at "+installed+" does not match its pin in "+lockFile,
			"pinned sha256:", "found "+sha256File(t, installed), "avenor will not run it", "avenor plugin use echo@1.0.0", "avenor plugin install")
		if s, _ := os.ReadFile(sentinel); !strings.HasPrefix(string(s), "FAILED\n") {
			t.Errorf("sentinel = %q", s)
		}
		r = w.ok(proj, "plugin", "list")
		mustContain(t, "plugin list", r.stdout, "! cannot run", "does not match its pin")
	})
	t.Run("missing", func(t *testing.T) {
		dir, away := filepath.Dir(installed), w.path("away")
		if err := os.Rename(dir, away); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(away, dir)
		r, start := w.run(proj, dev, "echo")
		if r.code != 1 || start != nil {
			t.Fatalf("exit %d, session.start %v; want exit 1 and no session", r.code, start)
		}
		mustContain(t, "stderr", r.stderr, "plugin echo 1.0.0 is pinned in "+lockFile, installed+" does not exist",
			"will not fall back", "(installed: 1.1.0)", "avenor plugin unpin echo")
	})
	if got := w.pluginVersionOf(proj, dev); got != "1.0.0" {
		t.Errorf("restored pin: plugin_version = %q", got)
	}
}

// TestPinADevBuildByPath: --path pins a build by hash, with a warning; a
// rebuild is refused until it is pinned again.
func TestPinADevBuildByPath(t *testing.T) {
	w := newPluginWorld(t)
	proj := w.mkdir("project")
	build := filepath.Join(proj, "bin", "avenor-plugin-echo")
	if err := copyFile(w.bin("echo-1.1.0", "avenor-plugin-echo"), build); err != nil {
		t.Fatal(err)
	}
	r := w.ok(proj, "plugin", "use", "--path", "bin/avenor-plugin-echo")
	mustContain(t, "stderr", r.stderr, "warning: pinned a development build of echo by path (bin/avenor-plugin-echo)", "re-run `avenor plugin use --path`")
	lock, _ := os.ReadFile(filepath.Join(proj, ".avenor", "plugins.lock"))
	mustContain(t, "lock", string(lock), "[plugins.echo]\nversion = \"1.1.0\"\nhash = \""+sha256File(t, build)+"\"\npath = \"bin/avenor-plugin-echo\"\n")
	if got := w.pluginVersionOf(w.mkdir("project", "sub"), nil); got != "1.1.0" {
		t.Errorf("plugin_version = %q", got)
	}
	if err := copyFile(w.bin("echo-1.0.0", "avenor-plugin-echo"), build); err != nil { // a rebuild
		t.Fatal(err)
	}
	rr, _ := w.run(proj, nil, "echo")
	if rr.code != 1 {
		t.Fatalf("a rebuilt dev build ran: exit %d", rr.code)
	}
	mustContain(t, "stderr", rr.stderr, "development build of plugin echo", "does not match its pin", "re-pin it with `avenor plugin use --path "+build+"`")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugin", "use"}, "plugin use needs <family>@<version> or --path <binary>"},
		{[]string{"plugin", "use", "echo@1.0.0", "--path", "bin/avenor-plugin-echo"}, "--path and echo@1.0.0 are mutually exclusive"},
		{[]string{"plugin", "use", "echo@../1"}, `"../1" is not an exact version`},
		{[]string{"plugin", "unpin"}, "plugin unpin takes one plugin family"},
	} {
		r := w.avenor(proj, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("avenor %v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r2 := w.avenor(proj, nil, "plugin", "use", "echo@9.9.9")
	if r2.code != 1 || !strings.Contains(r2.stderr, "plugin echo 9.9.9 is not installed") {
		t.Errorf("pinning a version not installed: exit %d, %s", r2.code, r2.stderr)
	}
}

// TestAPluginOfAnotherMajorIsRefused: a plugin speaking only protocol 99
// is refused at once by run, install and verify, saying what to install.
func TestAPluginOfAnotherMajorIsRefused(t *testing.T) {
	w := newPluginWorld(t)
	dir := w.mkdir("work")
	bin := w.bin("major99", "avenor-plugin-major99")
	want := []string{"avenor-plugin-major99 at " + bin + " speaks only plugin protocol 99", "this avenor speaks plugin protocol 1",
		"Install a release of avenor-plugin-major99 built for plugin protocol 1", "avenor plugin install <binary>"}
	for _, args := range [][]string{
		{"--backend", "major99", "--prompt", "hi"},
		{"plugin", "install", bin},
		{"plugin", "verify", bin},
	} {
		r := w.avenor(dir, []string{"AVENOR_PLUGIN_PATH=" + filepath.Dir(bin)}, args...)
		if r.code != 1 || r.took > 20*time.Second {
			t.Errorf("avenor %v: exit %d after %v, want 1 at once\n%s", args, r.code, r.took, r.stderr)
		}
		mustContain(t, fmt.Sprintf("avenor %v", args), r.stderr, want...)
	}
}

// TestPluginVerify: verify passes on the shipped plugins and fails on the
// broken one, naming each behaviour it does not deliver.
func TestPluginVerify(t *testing.T) {
	w := newPluginWorld(t)
	dir := w.mkdir("work")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"echo", []string{w.bin("echo-1.1.0", "avenor-plugin-echo")}},
		{"scripted", []string{w.bin("scripted", "avenor-plugin-scripted"),
			"--prompt", "tool measure kind=read\nsay ok", "--long-prompt", "chunks 500 every=10ms", "--permission-prompt", "permission"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := w.avenor(dir, nil, append([]string{"plugin", "verify"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			mustContain(t, "report", r.stdout, "PASS  handshake/started_by_hand_it_explains_and_exits\n",
				"PASS  "+tc.name+"/session/cancel_ends_the_turn_promptly\n", "PASS  "+tc.name+"/restart/fresh_plugin_resumes_after_a_death\n", " 0 failed, 0 skipped\n")
		})
	}
	t.Run("broken", func(t *testing.T) {
		t.Parallel()
		r := w.avenor(dir, nil, "plugin", "verify", "--cancel-within", "2s", w.bin("broken", "avenor-plugin-broken"))
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stdout)
		}
		mustContain(t, "report", r.stdout,
			"FAIL  broken-cancel/session/cancel_ends_the_turn_promptly: cancel is advertised, but after Cancel the turn ran on",
			"FAIL  broken-cancel/permission/cancel_while_a_permission_is_pending: cancel is advertised, but the turn was still running",
			"FAIL  broken-resume/resume/resume_continues_a_session_by_id: resume is advertised, but resuming session",
			"FAIL  broken-resume/restart/fresh_plugin_resumes_after_a_death: resume is advertised (cross_process)",
			"PASS  broken-resume/session/cancel_ends_the_turn_promptly\n",
			"PASS  broken-cancel/resume/resume_continues_a_session_by_id\n",
			"FAIL  broken-cancel/session/cancel_right_after_prompt_ends_the_turn: round 1 of 20",
			" 7 failed, 0 skipped\n")

		r = w.avenor(dir, nil, "plugin", "verify", "--json", "--backend", "broken-resume", w.bin("broken", "avenor-plugin-broken"))
		var rep struct {
			Plugin  struct{ Name, Version string }
			Results []struct{ Name, Status, Detail string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 {
			t.Fatalf("--json: exit %d, %v\n%s", r.code, err, r.stdout)
		}
		failed := map[string]bool{}
		for _, res := range rep.Results {
			if strings.HasPrefix(res.Name, "broken-cancel/") {
				t.Errorf("--backend broken-resume checked %s", res.Name)
			}
			if res.Status == "fail" {
				failed[res.Name] = true
			}
		}
		if rep.Plugin.Name != "broken" || len(failed) != 3 || !failed["broken-resume/resume/resume_in_a_fresh_plugin_process"] {
			t.Errorf("--json report: %+v", rep)
		}
	})
}
