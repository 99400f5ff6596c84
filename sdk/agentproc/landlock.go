package agentproc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The Landlock launcher (docs/sandbox.md#mechanism-landlock). Landlock
// restricts the process that applies it and everything it then starts,
// for good: applied in the plugin it would confine the plugin itself. So
// the runtime is started as this very binary run again (/proc/self/exe)
// with LandlockEnv set, like the reaper (reaper.go): the package's init
// sees it before the program's main, builds the ruleset, restricts itself
// and execs the runtime CLI in its place — same pid, same pipes, same
// process group, cgroup and Pdeathsig, so the plugin owns the runtime
// exactly as without the launcher. Anything that goes wrong before the
// exec ends the launcher with LandlockLauncherExit and a message on
// stderr: the runtime never runs without its boundary.

// LandlockEnv carries the launcher's spec (JSON); set, this package's init
// runs the launcher instead of the program. The runtime does not see it.
const LandlockEnv = "AVENOR_AGENTPROC_LANDLOCK"

// LandlockLauncherExit is the launcher's exit status when it could not
// restrict itself or exec the runtime.
const LandlockLauncherExit = 126

// LandlockLaunchFailed starts the line the launcher writes on stderr when
// it could not start the runtime inside its boundary; its reason follows.
const LandlockLaunchFailed = "agentproc: the Landlock launcher did not start the runtime: "

// LandlockInstallHint is how to get a kernel that enforces Landlock.
const LandlockInstallHint = "run on a Linux kernel with Landlock enabled (5.13 or later, landlock in the lsm= boot list)"

// landlockSpec is what the plugin hands the launcher.
type landlockSpec struct {
	// Path is the runtime CLI, absolute; the launcher execs it with its
	// own argv.
	Path string `json:"path"`
	// Writable are the paths writable and readable: --dir, the runtime's
	// directories, allowed paths and the private temp dir.
	Writable []string `json:"writable"`
	// DenyRead are the paths nothing may read.
	DenyRead []string `json:"deny_read,omitempty"`
	// ConnectPorts, when not empty, are the only TCP ports the runtime
	// may connect to (--sandbox-network allow=:PORT,…; ABI 4 or later).
	ConnectPorts []int `json:"connect_ports,omitempty"`
}

// landlockPlan is the ruleset the launcher grants: everything not in it
// is denied (Landlock is allow-only).
type landlockPlan struct {
	// Writable get every right Landlock handles.
	Writable []string
	// ReadDirs and ReadFiles get read and execute: the entries of "/"
	// but /dev, and those beside the deny paths and their ancestors.
	ReadDirs, ReadFiles []string
	// ListDirs may be listed, everything beneath them: "/" when nothing
	// is denied.
	ListDirs []string
	// Devices get read, write and ioctl: the character devices every
	// program expects to write (/dev/null, a terminal).
	Devices []string
	// ConnectPorts, when not empty, are the only TCP ports connect may
	// reach: TCP connect is handled and these are allowed.
	ConnectPorts []int
}

// LandlockNetABI is the first Landlock ABI that restricts TCP connect.
const LandlockNetABI = 4

// landlockDevices are the devices writable under Landlock, where they
// exist.
var landlockDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// LandlockExpressible says whether Landlock can enforce sb at all, and if
// not, why: Landlock has no network namespace (network none is refused:
// from ABI 4 it restricts TCP bind and connect only, never UDP or other
// sockets), and its rules only add up, so a deny path inside a writable
// one, or a writable path inside a deny path, cannot be expressed.
func LandlockExpressible(sb runtime.Sandbox) error {
	if _, err := landlockConnectPorts(sb.Network); err != nil {
		return err
	}
	writable := append(slices.Clone(sb.Writable), sb.RuntimeDirs...)
	for _, d := range sb.DenyRead {
		for _, w := range writable {
			if within(d, w) {
				return fmt.Errorf("landlock cannot hide %s inside the writable %s", d, w)
			}
			if within(w, d) {
				return fmt.Errorf("landlock cannot keep %s writable inside the hidden %s", w, d)
			}
		}
	}
	return nil
}

// landlockConnectPorts are the TCP ports network allows connecting to
// under Landlock, nil for host (no restriction). Landlock tells ports
// apart, never hosts or protocols: only an allow-list of :PORT entries
// (any host at that port) is expressible; none, model and an entry that
// names a host — loopback included, which Landlock would widen to every
// host at the port — are refused (docs/sandbox.md#network).
func landlockConnectPorts(network string) ([]int, error) {
	p, err := runtime.ParseNetProfile(network)
	if err != nil {
		return nil, err
	}
	switch p.Kind {
	case runtime.SandboxNetworkHost:
		return nil, nil
	case runtime.SandboxNetworkNone:
		return nil, errors.New("landlock cannot take the network away (--sandbox-network none needs bubblewrap)")
	case runtime.SandboxNetworkModel:
		return nil, errors.New("landlock cannot tell hosts apart (--sandbox-network model needs bubblewrap)")
	}
	ports := make([]int, 0, len(p.Allow))
	for _, d := range p.Allow {
		if d.Host != "" || d.Port == 0 {
			return nil, fmt.Errorf("landlock can allow TCP ports only, on every host: --sandbox-network allow=%s needs bubblewrap, or write it :PORT", d)
		}
		ports = append(ports, d.Port)
	}
	return ports, nil
}

// within reports whether p is base or lies under it; both are clean and
// absolute.
func within(p, base string) bool {
	return p == base || base == "/" || strings.HasPrefix(p, base+"/")
}

// planLandlock is the ruleset for spec: spec's writable paths; /dev
// only as landlockDevices and the random devices (the rest of it — a
// disk's block device above all — is the host's); and everything else
// readable. Landlock cannot subtract, so "everything else" is every entry
// of "/" but /dev, and with deny paths, every entry of each deny path's
// ancestors that is neither a deny path nor such an ancestor, readable
// one by one. An ancestor is therefore not listable (its entries open,
// its listing is denied) — but for "/" when nothing is denied; an entry
// created there later is unreadable; a symlink entry gets no rule (its
// target is reached, and judged, by its own path); an ancestor that
// cannot be listed grants nothing beneath it. readDir lists a directory.
func planLandlock(spec landlockSpec, readDir func(string) ([]fs.DirEntry, error)) (landlockPlan, error) {
	plan := landlockPlan{Writable: spec.Writable}
	for _, p := range append(slices.Clone(spec.Writable), spec.DenyRead...) {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return landlockPlan{}, fmt.Errorf("agentproc: sandbox path %q is not absolute and clean", p)
		}
	}
	if err := LandlockExpressible(runtime.Sandbox{Writable: spec.Writable, DenyRead: spec.DenyRead}); err != nil {
		return landlockPlan{}, err
	}
	for _, port := range spec.ConnectPorts {
		if port < 1 || port > 65535 {
			return landlockPlan{}, fmt.Errorf("agentproc: sandbox port %d is not from 1 to 65535", port)
		}
	}
	plan.ConnectPorts = spec.ConnectPorts
	denied := func(p string) bool {
		return slices.ContainsFunc(spec.DenyRead, func(deny string) bool { return within(p, deny) })
	}
	for _, d := range landlockDevices {
		if !denied(d) {
			plan.Devices = append(plan.Devices, d)
		}
	}
	for _, d := range []string{"/dev/random", "/dev/urandom"} {
		if !denied(d) {
			plan.ReadFiles = append(plan.ReadFiles, d)
		}
	}
	if len(spec.DenyRead) == 0 {
		plan.ListDirs = []string{"/"}
	}
	blocked := map[string]bool{"/dev": true}
	for _, d := range append([]string{"/"}, spec.DenyRead...) {
		for p := d; !blocked[p] || p == "/"; p = filepath.Dir(p) {
			blocked[p] = true
			if p == "/" {
				break
			}
		}
	}
	ancestors := make([]string, 0, len(blocked))
	for p := range blocked {
		if p != "/dev" && !slices.Contains(spec.DenyRead, p) {
			ancestors = append(ancestors, p)
		}
	}
	slices.Sort(ancestors)
	for _, a := range ancestors {
		plan.addEntries(a, blocked, readDir)
	}
	return plan, nil
}

// addEntries grants read on a's entries that are not blocked, symlinks
// left out; an a that cannot be listed grants nothing: stricter, never
// weaker.
func (plan *landlockPlan) addEntries(a string, blocked map[string]bool, readDir func(string) ([]fs.DirEntry, error)) {
	entries, err := readDir(a)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(a, e.Name())
		switch {
		case blocked[p] || e.Type()&fs.ModeSymlink != 0:
		case e.IsDir():
			plan.ReadDirs = append(plan.ReadDirs, p)
		default:
			plan.ReadFiles = append(plan.ReadFiles, p)
		}
	}
}

// landlockTempPrefix starts the name of every private temp dir; the
// plugin's pid follows, then a random part.
const landlockTempPrefix = "avenor-sandbox-"

// landlockTempDir makes the run's private temp dir under the system's
// (TMPDIR or /tmp), its symlinks resolved; TMPDIR names it inside. The
// plugin removes it with the runtime's tree, the reaper when the plugin
// dies; where both were killed at once (the host cleaning a dead plugin's
// tree takes the reaper too), the next launch sweeps it: a dir of this
// user's whose plugin is gone.
func landlockTempDir() (string, error) {
	sweepTempDirs(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", landlockTempPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("agentproc: creating the sandbox's private temp dir: %w", err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// sweepTempDirs removes the private temp dirs under tmp left by plugins
// that are gone.
func sweepTempDirs(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), landlockTempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || processAlive(pid) || !ownedByMe(filepath.Join(tmp, e.Name())) {
			continue
		}
		_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
}
