package agentproc

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// requireLandlock skips a test that needs a kernel enforcing Landlock, or
// fails it when AVENOR_REQUIRE_SANDBOX is set.
func requireLandlock(t *testing.T) {
	t.Helper()
	if LandlockABI() < 1 {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatal("AVENOR_REQUIRE_SANDBOX is set but this kernel does not enforce Landlock")
		}
		t.Skip("this kernel does not enforce Landlock; " + LandlockInstallHint)
	}
}

// TestPlanLandlock: the deny list turns into read rules for the siblings
// of each deny path and of its ancestors, symlinks left out; /dev is only
// its harmless devices (never a disk); what Landlock cannot express is
// refused.
func TestPlanLandlock(t *testing.T) {
	tree := fstest.MapFS{
		"bin":                  {Mode: fs.ModeSymlink},
		"dev/sda":              {},
		"etc/passwd":           {},
		"usr/bin/sh":           {},
		"home/u/.ssh/id":       {},
		"home/u/.bashrc":       {},
		"home/u/proj/a.go":     {},
		"home/u/.config/gh/x":  {},
		"home/u/.config/app/y": {},
		"home/u/link":          {Mode: fs.ModeSymlink},
		"home/v/z":             {},
	}
	random := []string{"/dev/random", "/dev/urandom"}
	readDir := func(p string) ([]fs.DirEntry, error) {
		if p == "/" {
			return tree.ReadDir(".")
		}
		return tree.ReadDir(strings.TrimPrefix(p, "/"))
	}
	for _, tc := range []struct {
		name string
		spec landlockSpec
		want landlockPlan
		err  string
	}{
		{name: "no deny path: the whole tree", spec: landlockSpec{Writable: []string{"/home/u/proj"}},
			want: landlockPlan{Writable: []string{"/home/u/proj"}, ListDirs: []string{"/"}, Devices: landlockDevices,
				ReadDirs: []string{"/etc", "/home", "/usr"}, ReadFiles: random}},
		{name: "deny paths: their siblings up to /", spec: landlockSpec{Writable: []string{"/home/u/proj"}, DenyRead: []string{"/home/u/.ssh", "/home/u/.config/gh"}},
			want: landlockPlan{Writable: []string{"/home/u/proj"}, Devices: landlockDevices,
				ReadDirs:  []string{"/etc", "/home/v", "/usr", "/home/u/proj", "/home/u/.config/app"},
				ReadFiles: append([]string{"/home/u/.bashrc"}, random...)}},
		{name: "a missing deny path still blocks its ancestors", spec: landlockSpec{DenyRead: []string{"/home/v/.aws"}},
			want: landlockPlan{Devices: landlockDevices, ReadDirs: []string{"/etc", "/usr", "/home/u"}, ReadFiles: append([]string{"/home/v/z"}, random...)}},
		{name: "a deny path inside a writable one", spec: landlockSpec{Writable: []string{"/home/u"}, DenyRead: []string{"/home/u/.ssh"}},
			err: "landlock cannot hide /home/u/.ssh inside the writable /home/u"},
		{name: "a writable path inside a deny path", spec: landlockSpec{Writable: []string{"/home/u/.ssh/x"}, DenyRead: []string{"/home/u/.ssh"}},
			err: "landlock cannot keep /home/u/.ssh/x writable inside the hidden /home/u/.ssh"},
		{name: "a relative path", spec: landlockSpec{Writable: []string{"proj"}}, err: `"proj" is not absolute`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planLandlock(tc.spec, readDir)
			if wantErr(t, err, tc.err) {
				return
			}
			sortPlan(&got)
			sortPlan(&tc.want)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func sortPlan(p *landlockPlan) {
	slices.Sort(p.ReadDirs)
	slices.Sort(p.ReadFiles)
}

func TestLandlockExpressible(t *testing.T) {
	if err := LandlockExpressible(runtime.Sandbox{Network: runtime.SandboxNetworkNone}); err == nil || !strings.Contains(err.Error(), "network") {
		t.Errorf("network none: err = %v", err)
	}
	sb := runtime.Sandbox{Writable: []string{"/w"}, DenyRead: []string{"/h/.ssh"}}.WithRuntimeDirs("/h")
	if err := LandlockExpressible(sb); err != nil {
		t.Errorf("runtime dirs matter under workspace only: %v", err)
	}
	sb.Profile = runtime.SandboxWorkspace
	if err := LandlockExpressible(sb.WithRuntimeDirs("/h")); err == nil {
		t.Error("a runtime dir holding a deny path was accepted")
	}
}

// TestStartLandlock: under the Landlock launcher a shell writes in its
// workspace, its runtime dir and TMPDIR, not beside them, and cannot read
// a denied key; the private temp dir is gone once the CLI is.
func TestStartLandlock(t *testing.T) {
	requireLandlock(t)
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, outside, home, rtDir, sb := workspaceTree(t, root, runtime.MechanismLandlock)
	p := startSh(t, Spec{Dir: dir, Sandbox: sb}, `
		echo "$TMPDIR"
		echo in > in.txt && echo in-ok || echo in-denied
		echo out > `+outside+`/out.txt 2>/dev/null && echo out-ok || echo out-denied
		cat `+home+`/.ssh/id_test 2>/dev/null && echo read-ok || echo read-denied
		echo rt > `+rtDir+`/state && echo rt-ok || echo rt-denied
		echo tmp > "$TMPDIR/x" && echo tmp-ok || echo tmp-denied
		env | grep -c `+LandlockEnv+` || true`)
	got := lineTexts(t, p)
	if len(got) == 0 {
		t.Fatalf("no output (stderr %q)", p.StderrTail())
	}
	tmp := got[0]
	want := []string{"in-ok", "out-denied", "read-denied", "rt-ok", "tmp-ok", "0"}
	if !reflect.DeepEqual(got[1:], want) || !strings.Contains(tmp, "avenor-sandbox-") {
		t.Fatalf("inside the sandbox: got %q, want a TMPDIR then %q (stderr %q)", got, want, p.StderrTail())
	}
	<-p.Done()
	if _, err := os.Stat(tmp); err == nil {
		t.Errorf("the private temp dir %s outlived the CLI", tmp)
	}
	if _, err := os.Stat(filepath.Join(outside, "out.txt")); err == nil {
		t.Error("a write outside the workspace reached the disk")
	}
}

// TestStartLandlockRefusesNetworkNone fails the launch, rather than run
// with the network, when Landlock is asked to take it away.
func TestStartLandlockRefusesNetworkNone(t *testing.T) {
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismLandlock, Network: runtime.SandboxNetworkNone}
	startRefused(t, sb, "with the network it was to lose", "landlock cannot take the network away")
}

// TestSweepTempDirs removes the private temp dirs of plugins that are
// gone, and only those.
func TestSweepTempDirs(t *testing.T) {
	tmp := t.TempDir()
	mine := filepath.Join(tmp, landlockTempPrefix+strconv.Itoa(os.Getpid())+"-1")
	gone := filepath.Join(tmp, landlockTempPrefix+"2147483646-1")
	other := filepath.Join(tmp, "avenor-sandbox-notapid")
	for _, d := range []string{mine, gone, other} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepTempDirs(tmp)
	for d, want := range map[string]bool{mine: true, gone: false, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", d, err == nil, want)
		}
	}
}
