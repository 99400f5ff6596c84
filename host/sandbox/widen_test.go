package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestPlanWrite: a denied write is widened by the path itself when it
// exists, else by its directory, and never by more: no ancestor further
// up, not the root, not the deny list, nothing under read-only, nothing
// Landlock cannot express.
func TestPlanWrite(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "avenor-widen-") // beyond the sandbox's own /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(real, "out")
	file := filepath.Join(dir, "exists.txt")
	secret := filepath.Join(real, "home", ".ssh")
	for _, d := range []string{dir, secret} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(real, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	box := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap,
		Writable: []string{"/work/app"}, DenyRead: []string{secret}}
	landlock := box
	landlock.Mechanism = sdk.MechanismLandlock
	readOnly := box
	readOnly.Profile, readOnly.Writable = sdk.SandboxReadOnly, nil
	for _, tc := range []struct {
		name  string
		sb    sdk.Sandbox
		path  string
		allow string // "": not widenable
	}{
		{"an existing file: the file", box, file, file},
		{"an existing directory: the directory", box, dir, dir},
		{"a file to create: its directory", box, filepath.Join(dir, "new.txt"), dir},
		{"symlinks resolved", box, filepath.Join(link, "new.txt"), dir},
		{"no ancestor further up", box, filepath.Join(dir, "a", "b", "new.txt"), ""},
		{"not the root", box, "/new-at-root", ""},
		{"not the sandbox's own /proc", box, "/proc/self/new", ""},
		{"not the sandbox's own /dev", box, "/dev/new", ""},
		{"not relative", box, "out/new.txt", ""},
		{"not the deny list", box, filepath.Join(secret, "id_new"), ""},
		{"a deny entry inside stays hidden under bubblewrap", box, filepath.Join(real, "home", "new.txt"), filepath.Join(real, "home")},
		{"landlock cannot hide it inside a writable path", landlock, filepath.Join(real, "home", "new.txt"), ""},
		{"landlock elsewhere", landlock, filepath.Join(dir, "new.txt"), dir},
		{"nothing under read-only", readOnly, file, ""},
		{"not the private /tmp", box, filepath.Join(t.TempDir(), "new.txt"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := PlanWrite(tc.sb, tc.path)
			if tc.allow == "" {
				if !errors.Is(err, ErrNotWidenable) {
					t.Fatalf("PlanWrite(%s) = %+v, %v; want ErrNotWidenable", tc.path, w, err)
				}
				return
			}
			if err != nil || w.AllowWrite != tc.allow || w.Op != OpWrite || w.Path != filepath.Clean(tc.path) {
				t.Fatalf("PlanWrite(%s) = %+v, %v; want allow_write %s", tc.path, w, err, tc.allow)
			}
			got, err := Widen(tc.sb, w)
			if err != nil || !slices.Equal(got.Writable, append(slices.Clone(tc.sb.Writable), tc.allow)) {
				t.Fatalf("Widen = %v, %v; want exactly %s added", got.Writable, err, tc.allow)
			}
			if len(tc.sb.Writable) != 1 {
				t.Fatal("Widen changed the sandbox it was given")
			}
			again, err := Widen(got, w)
			if err != nil || len(again.Writable) != len(got.Writable) {
				t.Fatalf("widening twice by %s = %v, %v; want it added once", tc.allow, again.Writable, err)
			}
		})
	}
}

// TestPlanOps: only a write is widened here; a connection waits for the
// network profile, and a read of the deny list or a launch never is.
func TestPlanOps(t *testing.T) {
	for _, op := range []string{OpRead, OpLaunch, ""} {
		if w, err := Plan(denialBox, op, "/srv/x", "example.com:443"); !errors.Is(err, ErrNotWidenable) {
			t.Errorf("Plan(%q) = %+v, %v; want ErrNotWidenable", op, w, err)
		}
	}
}

// TestPlanConnect: a refused connection widens an allow= list by exactly
// that host:port, once and within the list's bound; any other network
// profile, Landlock, and a destination that is not one host:port are not
// widened.
func TestPlanConnect(t *testing.T) {
	box := func(network, mechanism string) sdk.Sandbox {
		return sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: mechanism, Network: network}
	}
	bw := sdk.MechanismBubblewrap
	for _, tc := range []struct {
		network, mechanism, dest string
		want                     string // the widened --sandbox-network; "" refused
	}{
		{"allow=127.0.0.1:8080", bw, "127.0.0.1:9090", "allow=127.0.0.1:8080,127.0.0.1:9090"},
		{"allow=127.0.0.1:8080", bw, "API.example.com:443", "allow=127.0.0.1:8080,api.example.com:443"},
		{"allow=127.0.0.1:8080", bw, "127.0.0.1:8080", "allow=127.0.0.1:8080"},
		{"allow=api.example.com", bw, "[::1]:443", "allow=api.example.com,[::1]:443"},
		{"model", bw, "127.0.0.1:9090", ""},
		{"none", bw, "127.0.0.1:9090", ""},
		{"host", bw, "127.0.0.1:9090", ""},
		{"allow=:8080", sdk.MechanismLandlock, "127.0.0.1:9090", ""},
		{"allow=127.0.0.1:8080", bw, "example.com", ""},
		{"allow=127.0.0.1:8080", bw, "a:1,b:2", ""},
		{"allow=127.0.0.1:8080", bw, "", ""},
		{"allow=127.0.0.1:8080", bw, "example.com:99999", ""},
	} {
		sb := box(tc.network, tc.mechanism)
		w, err := Plan(sb, OpConnect, "", tc.dest)
		if tc.want == "" {
			if !errors.Is(err, ErrNotWidenable) {
				t.Errorf("%s under %s/%s: Plan = %+v, %v; want ErrNotWidenable", tc.dest, tc.network, tc.mechanism, w, err)
			}
			if _, err := Widen(sb, Widening{Op: OpConnect, Destination: tc.dest}); !errors.Is(err, ErrNotWidenable) {
				t.Errorf("%s under %s: Widen = %v; want ErrNotWidenable", tc.dest, tc.network, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s under %s: Plan: %v", tc.dest, tc.network, err)
			continue
		}
		got, err := Widen(sb, w)
		if err != nil || got.Network != tc.want {
			t.Errorf("%s under %s: Widen = %q, %v; want %q", tc.dest, tc.network, got.Network, err, tc.want)
		}
		if got.Profile != sb.Profile || len(got.Writable) != len(sb.Writable) {
			t.Errorf("%s: Widen changed more than the network: %+v", tc.dest, got)
		}
	}
	// The bound: a full list is not widened.
	full := "allow="
	for i := range sdk.MaxNetworkAllow {
		if i > 0 {
			full += ","
		}
		full += fmt.Sprintf("127.0.0.1:%d", 1000+i)
	}
	if _, err := Widen(box(full, bw), Widening{Op: OpConnect, Destination: "127.0.0.1:9"}); !errors.Is(err, ErrNotWidenable) {
		t.Errorf("Widen of a full allow= list: %v; want ErrNotWidenable", err)
	}
}

// TestWidenBounded: the writable paths stay within MaxAllowWrite besides
// the run's dir.
func TestWidenBounded(t *testing.T) {
	sb := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap}
	for i := range MaxAllowWrite + 1 {
		sb.Writable = append(sb.Writable, filepath.Join("/srv", string(rune('a'+i%26)), filepath.Base(t.Name()), string(rune('a'+i/26))))
	}
	if _, err := Widen(sb, Widening{Op: OpWrite, Path: "/srv/new", AllowWrite: "/srv/new"}); !errors.Is(err, ErrNotWidenable) {
		t.Errorf("Widen past the bound: %v; want ErrNotWidenable", err)
	}
}

// TestWideningKey: a path and a destination are told apart.
func TestWideningKey(t *testing.T) {
	a := Widening{Op: OpWrite, Path: "/srv/x"}.Key()
	b := Widening{Op: OpConnect, Destination: "/srv/x"}.Key()
	c := Widening{Op: OpWrite, Path: "/srv/x", AllowWrite: "/srv"}.Key()
	if a == b || a != c {
		t.Errorf("keys %q and %q", a, b)
	}
}

// FuzzPlanWrite: whatever path a tool's output names, a widening is
// either refused or exactly the path or its directory, resolved, never
// the root nor the deny list.
func FuzzPlanWrite(f *testing.F) {
	for _, s := range []string{"/", "/tmp/x", "/var/tmp", "/etc/hosts", "relative", "/../..", "/proc/self/x", ""} {
		f.Add(s)
	}
	box := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap, Writable: []string{"/work/app"}, DenyRead: []string{"/etc"}}
	f.Fuzz(func(t *testing.T, path string) {
		w, err := PlanWrite(box, path)
		if err != nil {
			if !errors.Is(err, ErrNotWidenable) {
				t.Fatalf("PlanWrite(%q): %v is not ErrNotWidenable", path, err)
			}
			return
		}
		if !filepath.IsAbs(w.AllowWrite) || w.AllowWrite == "/" || under(w.AllowWrite, box.DenyRead) || sandboxOwn(box, w.AllowWrite) {
			t.Fatalf("PlanWrite(%q) allows %q", path, w.AllowWrite)
		}
		want := []string{w.Path, filepath.Dir(w.Path)}
		for i, p := range want {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				want[i] = real
			}
		}
		if !slices.Contains(want, w.AllowWrite) {
			t.Fatalf("PlanWrite(%q) allows %q, neither the path nor its directory", path, w.AllowWrite)
		}
	})
}
