package agentproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// BwrapBinary is the name the bubblewrap sandbox is looked up by in the
// plugin's PATH.
const BwrapBinary = "bwrap"

// BwrapInstallHint is how to get bubblewrap where it is missing.
const BwrapInstallHint = "install bubblewrap (apt-get install bubblewrap)"

// PathKind is what a path is on the machine, as the sandbox binds it.
type PathKind int

// Path kinds.
const (
	PathMissing PathKind = iota
	PathDir
	PathFile
)

// StatPath is the machine's PathKind of p, following symlinks.
func StatPath(p string) PathKind {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return PathMissing
	case fi.IsDir():
		return PathDir
	}
	return PathFile
}

// BwrapArgs is the bwrap command line (without the program name) that runs
// argv, in dir, inside sb (docs/sandbox.md#mechanism-bubblewrap): the whole
// filesystem bound read-only; /dev and /proc as bwrap makes them; a
// private /tmp, which TMPDIR names; sb's writable paths and runtime directories bound
// writable over it (workspace only); the runtime's own files read-only;
// the deny list hidden last, so that a
// secret inside a writable path stays hidden — a directory under a
// read-only empty tmpfs, a file under /dev/null; a missing deny path is
// skipped (there is nothing to read). bwrap dies with its parent; with
// network none it gets a network namespace of its own. stat says what a
// path is; the caller resolves symlinks first.
func BwrapArgs(sb runtime.Sandbox, dir string, argv []string, stat func(string) PathKind) ([]string, error) {
	if !sb.Active() {
		return nil, errors.New("agentproc: no sandbox asked for")
	}
	if sb.Mechanism != runtime.MechanismBubblewrap {
		return nil, fmt.Errorf("agentproc: sandbox mechanism %q is not supported", sb.Mechanism)
	}
	if len(argv) == 0 {
		return nil, ErrNoPath
	}
	args := []string{"--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--setenv", "TMPDIR", "/tmp"}
	switch sb.Profile {
	case runtime.SandboxWorkspace:
		for _, p := range append(append([]string(nil), sb.Writable...), sb.RuntimeDirs...) {
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("agentproc: sandbox writable path %q is not absolute", p)
			}
			args = append(args, "--bind", p, p)
		}
	case runtime.SandboxReadOnly:
		// The working directory stays visible, read-only, where the
		// private /tmp would hide it.
		if dir != "" {
			args = append(args, "--ro-bind", dir, dir)
		}
	default:
		return nil, fmt.Errorf("agentproc: sandbox profile %q is not supported", sb.Profile)
	}
	for _, p := range sb.RuntimeFiles {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("agentproc: runtime file %q is not absolute", p)
		}
		args = append(args, "--ro-bind", p, p)
	}
	for _, p := range sb.DenyRead {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("agentproc: sandbox deny path %q is not absolute", p)
		}
		switch stat(p) {
		case PathDir:
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		case PathFile:
			args = append(args, "--ro-bind", os.DevNull, p)
		}
	}
	switch sb.Network {
	case "", runtime.SandboxNetworkHost:
	case runtime.SandboxNetworkNone:
		args = append(args, "--unshare-net")
	default:
		return nil, fmt.Errorf("agentproc: sandbox network %q is not supported", sb.Network)
	}
	if dir != "" {
		args = append(args, "--chdir", dir)
	}
	args = append(args, "--")
	return append(args, argv...), nil
}

// sandboxed turns the launch of path with argv into bwrap's (path and
// argv of bwrap itself), creating the runtime's own directories it keeps
// writable. Without bwrap it fails: nothing runs outside the sandbox it
// asked for.
func sandboxed(spec Spec, path string) (string, []string, error) {
	bwrap, err := exec.LookPath(BwrapBinary)
	if err != nil {
		return "", nil, fmt.Errorf("agentproc: the runtime must run inside a %s sandbox but %s is not usable (%v); %s", spec.Sandbox.Profile, BwrapBinary, err, BwrapInstallHint)
	}
	sb := spec.Sandbox
	dirs := make([]string, 0, len(sb.RuntimeDirs))
	for _, d := range sb.RuntimeDirs {
		if !filepath.IsAbs(d) {
			return "", nil, fmt.Errorf("agentproc: runtime directory %q is not absolute", d)
		}
		if err := os.MkdirAll(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", nil, fmt.Errorf("agentproc: creating runtime directory %s to keep it writable in the sandbox: %w", d, err)
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		dirs = append(dirs, d)
	}
	sb.RuntimeDirs = dirs
	// The runtime's binary stays visible where the private /tmp would
	// hide it.
	sb.RuntimeFiles = append(append([]string(nil), sb.RuntimeFiles...), path)
	args, err := BwrapArgs(sb, spec.Dir, append([]string{path}, spec.Args...), StatPath)
	if err != nil {
		return "", nil, err
	}
	return bwrap, append([]string{BwrapBinary}, args...), nil
}

// XDGDirs are app's own directories under the XDG base directories of the
// runtime's environment env (os.Environ's shape): data, state, cache and
// config, each from its XDG_*_HOME or under HOME. A plugin keeps them
// writable in a workspace sandbox (runtime.Sandbox.WithRuntimeDirs). No
// HOME and no XDG variable gives none.
func XDGDirs(env []string, app string) []string {
	get := func(k string) string {
		v := ""
		for _, kv := range env {
			if len(kv) > len(k) && kv[:len(k)] == k && kv[len(k)] == '=' {
				v = kv[len(k)+1:]
			}
		}
		return v
	}
	home := get("HOME")
	var out []string
	for _, d := range []struct{ env, def string }{
		{"XDG_DATA_HOME", ".local/share"}, {"XDG_STATE_HOME", ".local/state"},
		{"XDG_CACHE_HOME", ".cache"}, {"XDG_CONFIG_HOME", ".config"},
	} {
		base := get(d.env)
		if !filepath.IsAbs(base) {
			if home == "" || !filepath.IsAbs(home) {
				continue
			}
			base = filepath.Join(home, d.def)
		}
		out = append(out, filepath.Join(base, app))
	}
	return out
}
