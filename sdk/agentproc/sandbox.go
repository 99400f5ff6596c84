package agentproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

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
// filesystem bound read-only; a process namespace of its own, so that its
// /proc shows no process outside (/proc/<pid>/root of one would lead back
// to the host's filesystem); no capabilities, even for root (who would
// otherwise keep them, mount and make device nodes); /dev and /proc as
// bwrap makes them; a
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
	args := []string{"--die-with-parent", "--unshare-pid", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
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
	net, err := runtime.ParseNetProfile(sb.Network)
	if err != nil {
		return nil, fmt.Errorf("agentproc: %w", err)
	}
	switch {
	case net.Kind == runtime.SandboxNetworkHost:
	case net.Kind == runtime.SandboxNetworkNone:
		args = append(args, "--unshare-net")
	case net.Filtered():
		// Only the loopback, and the proxy's socket among the runtime's
		// files: the forwarder (netfwd.go) is the one way out.
		if !filepath.IsAbs(sb.ProxySocket) || !slices.Contains(sb.RuntimeFiles, sb.ProxySocket) {
			return nil, fmt.Errorf("agentproc: sandbox network %s needs the proxy socket bound into the sandbox", sb.Network)
		}
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

// launch is how a sandboxed runtime is started: the program and argv to
// exec, variables to add to its environment, and a private temp dir to
// remove once it and its tree are gone ("" for none).
type launch struct {
	path    string
	argv    []string
	env     []string
	tempDir string
}

// removeTemp removes l's private temp dir, if it has one.
func (l launch) removeTemp() {
	if l.tempDir != "" {
		_ = os.RemoveAll(l.tempDir)
	}
}

// sandboxed turns the launch of path with argv into one inside
// spec.Sandbox, by its mechanism: bwrap's command line, or this binary
// run again as the Landlock launcher (landlock.go). It creates the
// runtime's own directories it keeps writable. What the mechanism needs
// and does not find fails the launch: nothing runs outside the sandbox it
// asked for.
func sandboxed(spec Spec, path string) (launch, error) {
	sb := spec.Sandbox
	if sb.Mechanism == runtime.MechanismBubblewrap {
		if _, err := exec.LookPath(BwrapBinary); err != nil {
			return launch{}, fmt.Errorf("agentproc: the runtime must run inside a %s sandbox but %s is not usable (%v); %s", sb.Profile, BwrapBinary, err, BwrapInstallHint)
		}
	}
	dirs, err := runtimeDirs(sb.RuntimeDirs)
	if err != nil {
		return launch{}, err
	}
	sb.RuntimeDirs = dirs
	switch sb.Mechanism {
	case runtime.MechanismBubblewrap:
		// The runtime's binary stays visible where the private /tmp
		// would hide it.
		sb.RuntimeFiles = append(append([]string(nil), sb.RuntimeFiles...), path)
		argv := append([]string{path}, spec.Args...)
		var env []string
		if net, err := runtime.ParseNetProfile(sb.Network); err == nil && net.Filtered() {
			var files []string
			if argv, env, files, err = netForwardLaunch(sb, argv); err != nil {
				return launch{}, err
			}
			sb.RuntimeFiles = append(sb.RuntimeFiles, files...)
		}
		args, err := BwrapArgs(sb, spec.Dir, argv, StatPath)
		if err != nil {
			return launch{}, err
		}
		bwrap, _ := exec.LookPath(BwrapBinary)
		return launch{path: bwrap, argv: append([]string{BwrapBinary}, args...), env: env}, nil
	case runtime.MechanismLandlock:
		return landlockLaunch(sb, spec, path)
	}
	return launch{}, fmt.Errorf("agentproc: sandbox mechanism %q is not supported", sb.Mechanism)
}

// runtimeDirs creates the runtime's own directories, absolute, and
// resolves their symlinks.
func runtimeDirs(in []string) ([]string, error) {
	dirs := make([]string, 0, len(in))
	for _, d := range in {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("agentproc: runtime directory %q is not absolute", d)
		}
		if err := os.MkdirAll(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("agentproc: creating runtime directory %s to keep it writable in the sandbox: %w", d, err)
		}
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		dirs = append(dirs, filepath.Clean(d))
	}
	return dirs, nil
}

// landlockLaunch is the launch of path through the Landlock launcher
// under sb: checked first (LandlockExpressible, this kernel's ABI), with
// a private temp dir writable and named by TMPDIR.
func landlockLaunch(sb runtime.Sandbox, spec Spec, path string) (launch, error) {
	switch sb.Profile {
	case runtime.SandboxWorkspace, runtime.SandboxReadOnly:
	default:
		return launch{}, fmt.Errorf("agentproc: sandbox profile %q is not supported", sb.Profile)
	}
	if err := LandlockExpressible(sb); err != nil {
		return launch{}, fmt.Errorf("agentproc: %w", err)
	}
	if LandlockABI() < 1 {
		return launch{}, fmt.Errorf("agentproc: the runtime must run inside a %s sandbox (landlock) but this kernel does not enforce Landlock; %s", sb.Profile, LandlockInstallHint)
	}
	ports, err := landlockConnectPorts(sb.Network)
	if err != nil {
		return launch{}, fmt.Errorf("agentproc: %w", err)
	}
	if len(ports) > 0 && LandlockABI() < LandlockNetABI {
		return launch{}, fmt.Errorf("agentproc: --sandbox-network %s under landlock needs Landlock ABI %d (Linux 6.7 or later), this kernel has %d; use bubblewrap", sb.Network, LandlockNetABI, LandlockABI())
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return launch{}, fmt.Errorf("agentproc: %w", err)
	}
	tmp, err := landlockTempDir()
	if err != nil {
		return launch{}, err
	}
	ls := landlockSpec{Path: abs, DenyRead: sb.DenyRead, ConnectPorts: ports}
	if sb.Profile == runtime.SandboxWorkspace {
		ls.Writable = append(append(ls.Writable, sb.Writable...), sb.RuntimeDirs...)
	}
	ls.Writable = append(ls.Writable, tmp)
	b, err := json.Marshal(ls)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return launch{}, fmt.Errorf("agentproc: %w", err)
	}
	argv := append([]string{spec.Path}, spec.Args...)
	return launch{path: "/proc/self/exe", argv: argv, env: []string{LandlockEnv + "=" + string(b), "TMPDIR=" + tmp}, tempDir: tmp}, nil
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
