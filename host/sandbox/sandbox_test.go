package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func flagName(k string) string { return "--" + strings.ReplaceAll(k, "_", "-") }

func TestResolve(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, other, home := filepath.Join(root, "work"), filepath.Join(root, "other"), filepath.Join(root, "home")
	for _, d := range []string{dir, other, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	var defaults []string
	for _, d := range DefaultDenyRead {
		defaults = append(defaults, filepath.Join(home, d))
	}
	ws := func(writable []string, deny ...string) sdk.Sandbox {
		return sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap, Network: sdk.SandboxNetworkHost,
			Writable: writable, DenyRead: append(append([]string(nil), defaults...), deny...)}
	}
	for _, tc := range []struct {
		name string
		req  Request
		want sdk.Sandbox
		err  string
	}{
		{name: "absent is off: nothing changes", req: Request{Dir: dir, Home: home}, want: sdk.Sandbox{}},
		{name: "off", req: Request{Profile: "off", Dir: dir, Home: home}, want: sdk.Sandbox{}},
		{name: "workspace: the dir writable, the defaults denied", req: Request{Profile: "workspace", Dir: dir, Home: home}, want: ws([]string{dir})},
		{name: "a dir that is a symlink binds its target", req: Request{Profile: "workspace", Dir: link, Home: home}, want: ws([]string{dir})},
		{name: "allow-write and deny-read add to the lists", req: Request{Profile: "workspace", Dir: dir, Home: home, AllowWrite: []string{other, link}, DenyRead: []string{"/etc/shadow"}},
			want: ws([]string{dir, other}, "/etc/shadow")},
		{name: "read-only: nothing writable", req: Request{Profile: "read-only", Network: "none", Dir: dir, Home: home},
			want: sdk.Sandbox{Profile: sdk.SandboxReadOnly, Mechanism: sdk.MechanismBubblewrap, Network: sdk.SandboxNetworkNone, DenyRead: defaults}},
		{name: "no home: only the paths given", req: Request{Profile: "workspace", Dir: dir},
			want: sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap, Network: sdk.SandboxNetworkHost, Writable: []string{dir}}},
		{name: "unknown profile", req: Request{Profile: "strict", Dir: dir}, err: `--sandbox: invalid sandbox profile "strict"`},
		{name: "unknown network", req: Request{Profile: "workspace", Network: "lan", Dir: dir}, err: "--sandbox-network: invalid"},
		{name: "relative allow-write", req: Request{Profile: "workspace", Dir: dir, AllowWrite: []string{"rel"}}, err: `--sandbox-allow-write "rel": give an absolute path`},
		{name: "missing allow-write", req: Request{Profile: "workspace", Dir: dir, AllowWrite: []string{filepath.Join(root, "nope")}}, err: "no such file or directory"},
		{name: "relative deny-read", req: Request{Profile: "workspace", Dir: dir, DenyRead: []string{".ssh"}}, err: `--sandbox-deny-read ".ssh": give an absolute path`},
		{name: "allow-write under read-only", req: Request{Profile: "read-only", Dir: dir, AllowWrite: []string{other}}, err: "nothing is writable"},
		{name: "sandbox flags without a sandbox", req: Request{Dir: dir, AllowWrite: []string{other}}, err: "need --sandbox workspace or read-only"},
		{name: "network none without a sandbox", req: Request{Network: "none", Dir: dir}, err: "need --sandbox"},
		{name: "too many allow-write", req: Request{Profile: "workspace", Dir: dir, AllowWrite: make([]string, MaxAllowWrite+1)}, err: "over the limit of 64"},
		{name: "too many deny-read", req: Request{Profile: "workspace", Dir: dir, DenyRead: make([]string, MaxDenyRead+1)}, err: "over the limit of 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.req, flagName)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestResolveAtTheBound accepts exactly MaxAllowWrite paths.
func TestResolveAtTheBound(t *testing.T) {
	dir := t.TempDir()
	paths := make([]string, MaxAllowWrite)
	for i := range paths {
		paths[i] = dir
	}
	if _, err := Resolve(Request{Profile: "workspace", Dir: dir, AllowWrite: paths, DenyRead: paths[:MaxDenyRead]}, flagName); err != nil {
		t.Fatal(err)
	}
}

func TestCheckMissingBwrap(t *testing.T) {
	sb := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	err := Check(context.Background(), sb, notFound)
	var missing *MissingError
	if !errors.As(err, &missing) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("err = %v, want a MissingError naming the install", err)
	}
	if err := Check(context.Background(), sdk.Sandbox{}, notFound); err != nil {
		t.Errorf("off needs nothing, got %v", err)
	}
	broken := func(string) (string, error) { return "/bin/false", nil }
	if err := Check(context.Background(), sb, broken); !errors.As(err, &missing) || !strings.Contains(err.Error(), "cannot run here") {
		t.Errorf("a bwrap that fails its trial: err = %v", err)
	}
}

// TestCheckThisMachine passes where bubblewrap is installed and usable;
// under AVENOR_REQUIRE_SANDBOX it must be.
func TestCheckThisMachine(t *testing.T) {
	sb := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	if err := Check(context.Background(), sb, nil); err != nil {
		if os.Getenv("AVENOR_REQUIRE_SANDBOX") != "" {
			t.Fatalf("AVENOR_REQUIRE_SANDBOX is set: %v", err)
		}
		t.Skip(err)
	}
}

// TestAbsUnder: relative paths become dir's, absolute ones stay, and a
// nil or empty list keeps its kind.
func TestAbsUnder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string
	}{
		{name: "nil stays nil", paths: nil, want: nil},
		{name: "empty stays empty", paths: []string{}, want: []string{}},
		{name: "relative and absolute", paths: []string{"build", "/etc/x", "a/../b"}, want: []string{"/d/build", "/etc/x", "/d/b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AbsUnder("/d", tc.paths)
			if !reflect.DeepEqual(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("AbsUnder(/d, %q) = %#v, want %#v", tc.paths, got, tc.want)
			}
		})
	}
}
