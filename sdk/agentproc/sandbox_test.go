package agentproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// requireBwrap is the bwrap binary, or the test skips — fails when
// AVENOR_REQUIRE_SANDBOX is set, as .ci/run sets it after installing
// bubblewrap.
func requireBwrap(t *testing.T) {
	t.Helper()
	path, err := exec.LookPath(BwrapBinary)
	if err == nil {
		err = exec.Command(path, "--ro-bind", "/", "/", "true").Run()
	}
	if err != nil {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatalf("AVENOR_REQUIRE_SANDBOX is set but bubblewrap is not usable: %v", err)
		}
		t.Skipf("bubblewrap not usable (%v); %s", err, BwrapInstallHint)
	}
}

func TestBwrapArgs(t *testing.T) {
	kinds := map[string]PathKind{"/h/.ssh": PathDir, "/h/.netrc": PathFile}
	stat := func(p string) PathKind { return kinds[p] }
	base := []string{"--die-with-parent", "--unshare-pid", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--setenv", "TMPDIR", "/tmp"}
	tail := func(extra ...string) []string {
		return append(append(append([]string(nil), base...), extra...), "--chdir", "/w", "--", "/bin/rt", "-x")
	}
	for _, tc := range []struct {
		name string
		sb   runtime.Sandbox
		want []string
		err  string
	}{
		{
			name: "workspace binds the dir and runtime dirs writable, then hides the deny list",
			sb: runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap,
				Writable: []string{"/w"}, RuntimeDirs: []string{"/h/.local/share/rt"}, RuntimeFiles: []string{"/tmp/rt.json"},
				DenyRead: []string{"/h/.ssh", "/h/.netrc", "/h/.aws"}},
			want: tail("--bind", "/w", "/w", "--bind", "/h/.local/share/rt", "/h/.local/share/rt", "--ro-bind", "/tmp/rt.json", "/tmp/rt.json",
				"--tmpfs", "/h/.ssh", "--remount-ro", "/h/.ssh", "--ro-bind", "/dev/null", "/h/.netrc"),
		},
		{
			name: "read-only binds nothing writable, not even runtime dirs",
			sb: runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap,
				Writable: []string{"/w"}, RuntimeDirs: []string{"/h/rt"}},
			want: tail("--ro-bind", "/w", "/w"),
		},
		{
			name: "network none unshares the network",
			sb:   runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap, Network: runtime.SandboxNetworkNone},
			want: tail("--ro-bind", "/w", "/w", "--unshare-net"),
		},
		{
			name: "off is refused: no wrapping without a sandbox",
			sb:   runtime.Sandbox{Profile: runtime.SandboxOff, Mechanism: runtime.MechanismBubblewrap},
			err:  "no sandbox",
		},
		{
			name: "unknown mechanism",
			sb:   runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: "landlock"},
			err:  "mechanism",
		},
		{
			name: "unknown profile",
			sb:   runtime.Sandbox{Profile: "wide-open", Mechanism: runtime.MechanismBubblewrap},
			err:  "profile",
		},
		{
			name: "relative writable path",
			sb:   runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Writable: []string{"w"}},
			err:  "not absolute",
		},
		{
			name: "unknown network",
			sb:   runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: runtime.MechanismBubblewrap, Network: "lan"},
			err:  "network",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BwrapArgs(tc.sb, "/w", []string{"/bin/rt", "-x"}, stat)
			if wantErr(t, err, tc.err) {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("args\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestXDGDirs(t *testing.T) {
	got := XDGDirs([]string{"HOME=/h", "XDG_CONFIG_HOME=/cfg", "XDG_CACHE_HOME=rel"}, "rt")
	want := []string{"/h/.local/share/rt", "/h/.local/state/rt", "/h/.cache/rt", "/cfg/rt"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := XDGDirs([]string{"PATH=/bin"}, "rt"); got != nil {
		t.Errorf("no HOME: got %q, want none", got)
	}
}

// TestStartSandboxed runs a shell inside a workspace sandbox: it writes in
// its dir, cannot write beside it, cannot read a denied secret, and a
// runtime dir it was given is created and writable.
func TestStartSandboxed(t *testing.T) {
	requireBwrap(t)
	// Beyond /tmp, which the sandbox's private /tmp would hide anyway:
	// only the boundary stands between these paths and the shell.
	root, err := os.MkdirTemp("/var/tmp", "agentproc-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	dir, outside, home, rtDir, sb := workspaceTree(t, root, runtime.MechanismBubblewrap)
	p := startSh(t, Spec{Dir: dir, Sandbox: sb}, `
		echo in > in.txt && echo in-ok || echo in-denied
		echo out > `+outside+`/out.txt 2>/dev/null && echo out-ok || echo out-denied
		cat `+home+`/.ssh/id_test 2>/dev/null && echo read-ok || echo read-denied
		echo rt > `+rtDir+`/state && echo rt-ok || echo rt-denied
		echo tmp > /tmp/x && echo tmp-ok || echo tmp-denied`)
	got := lineTexts(t, p)
	want := []string{"in-ok", "out-denied", "read-denied", "rt-ok", "tmp-ok"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("inside the sandbox: got %q, want %q (stderr %q)", got, want, p.StderrTail())
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a write outside the workspace reached the disk")
	}
	if _, err := os.Stat(filepath.Join(dir, "in.txt")); err != nil {
		t.Errorf("the write inside the workspace did not reach the disk: %v", err)
	}
}

// workspaceTree makes, under root, a workspace, a directory beside it and
// a home holding .ssh/id_test, and the workspace sandbox under mech that
// leaves the workspace and a runtime dir under the home writable and hides
// .ssh. It returns the workspace, the outside directory, the home, the
// runtime dir and the sandbox.
func workspaceTree(t *testing.T, root, mech string) (dir, outside, home, rtDir string, sb runtime.Sandbox) {
	t.Helper()
	dir, outside, home = filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "home")
	for _, d := range []string{dir, outside, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_test"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	rtDir = filepath.Join(home, ".local", "share", "rt")
	sb = runtime.Sandbox{Profile: runtime.SandboxWorkspace, Mechanism: mech,
		Writable: []string{dir}, DenyRead: []string{filepath.Join(home, ".ssh")}}.WithRuntimeDirs(rtDir)
	return dir, outside, home, rtDir, sb
}

// lineTexts is the text of every line p writes until its output ends
// (allLines).
func lineTexts(t *testing.T, p *Process) []string {
	t.Helper()
	var got []string
	for _, l := range allLines(t, p) {
		got = append(got, string(l.Data))
	}
	return got
}

// wantErr checks err against want, a substring of the error expected
// ("" for none); it reports whether a case expecting an error is done.
func wantErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want one containing %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// TestStartSandboxedWithoutBwrap fails, rather than launch unsandboxed,
// when bwrap is not on PATH.
func TestStartSandboxedWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap}
	startRefused(t, sb, "without the sandbox it asked for", "apt-get install bubblewrap")
}

// startRefused: Start of /bin/true inside sb fails, rather than launch it
// what (the way it would run unguarded), with an error containing want.
func startRefused(t *testing.T, sb runtime.Sandbox, what, want string) {
	t.Helper()
	p, err := Start(t.Context(), Spec{Path: "/bin/true", Sandbox: sb})
	if err == nil {
		p.Stop(0)
		t.Fatal("Start launched the runtime " + what)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want one containing %q", err, want)
	}
}

// TestStopSandboxed: stopping a sandboxed CLI leaves nothing behind — not
// bwrap, not the CLI, not a grandchild, not one that left the process
// group with setsid (the cgroup and the tree token still hold it).
func TestStopSandboxed(t *testing.T) {
	requireBwrap(t)
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap}
	for _, script := range []string{
		`trap '' TERM; sleep 100 & echo $!; sleep 100`,
		`setsid sleep 100 & echo $!; sleep 100`,
	} {
		p := startSh(t, Spec{Sandbox: sb, Dir: t.TempDir()}, script)
		l := nextLine(t, p)
		inner, err := strconv.Atoi(string(l.Data))
		if err != nil {
			t.Fatalf("%s: grandchild pid line %q: %v", script, l.Data, err)
		}
		grandchild := hostPID(t, p.PID(), inner)
		_ = p.Stop(200 * time.Millisecond)
		if err := syscall.Kill(p.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("%s: kill(bwrap, 0) after Stop = %v, want ESRCH", script, err)
		}
		waitGone(t, grandchild)
	}
}

// hostPID is the pid, as the host sees it, of the descendant of ancestor
// whose pid in its own process namespace (bwrap's --unshare-pid) is inner.
func hostPID(t *testing.T, ancestor, inner int) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var nspid []string
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Fields(rest)
			}
		}
		if len(nspid) < 2 || nspid[len(nspid)-1] != strconv.Itoa(inner) {
			continue
		}
		for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
			if p == ancestor {
				return pid
			}
			p = parentOf(p)
		}
	}
	t.Fatalf("no descendant of %d has pid %d in its namespace", ancestor, inner)
	return 0
}

// parentOf is pid's parent, 0 when unreadable.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
