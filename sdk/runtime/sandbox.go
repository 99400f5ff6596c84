package runtime

import (
	"fmt"
	"slices"
)

// SandboxProfile is how much of the filesystem a sandboxed runtime may
// write (docs/sandbox.md#profiles). Empty and SandboxOff both mean no
// sandbox: the runtime runs exactly as without one.
type SandboxProfile string

// Sandbox profiles.
const (
	// SandboxOff runs the runtime unsandboxed, as without --sandbox.
	SandboxOff SandboxProfile = "off"
	// SandboxWorkspace leaves the run's directory, the runtime's own
	// state and config directories and the paths allowed explicitly
	// writable; the rest of the filesystem is read-only.
	SandboxWorkspace SandboxProfile = "workspace"
	// SandboxReadOnly leaves nothing writable but a private /tmp.
	SandboxReadOnly SandboxProfile = "read-only"
)

// SandboxProfiles is the whole --sandbox vocabulary, in order.
var SandboxProfiles = []SandboxProfile{SandboxOff, SandboxWorkspace, SandboxReadOnly}

// Sandbox networks.
const (
	// SandboxNetworkHost shares the host's network (the default).
	SandboxNetworkHost = "host"
	// SandboxNetworkNone gives the runtime no network but its own loopback.
	SandboxNetworkNone = "none"
)

// Sandbox mechanisms (docs/sandbox.md#mechanisms): how the boundary is
// enforced. The host picks one per run and names it in Sandbox.Mechanism.
const (
	// MechanismBubblewrap wraps the runtime's launch in bwrap
	// (bubblewrap): mount namespaces, read-only binds, a private /tmp.
	MechanismBubblewrap = "bubblewrap"
	// MechanismLandlock launches the runtime through a small launcher that
	// restricts itself with Landlock (Linux 5.13 or later) and then execs
	// the runtime: no namespaces, access rules on the filesystem.
	MechanismLandlock = "landlock"
)

// SandboxMechanisms are the mechanisms this SDK launches a runtime inside,
// in the host's order of preference.
var SandboxMechanisms = []string{MechanismBubblewrap, MechanismLandlock}

// CapSandbox is the capability row saying that a backend's plugin launches
// its runtime inside the sandbox an Open asks for. Absent, the host refuses
// a sandboxed run of the backend before anything starts.
const CapSandbox Capability = "sandbox"

// Sandbox is the boundary a runtime is launched inside; the zero value (or
// Profile SandboxOff) asks for none. The host fills it: every path is
// absolute with its symlinks resolved. A plugin adds its runtime's own
// state and config directories (WithRuntimeDirs) before the launch.
type Sandbox struct {
	Profile SandboxProfile
	// Mechanism is how the boundary is enforced: MechanismBubblewrap or
	// MechanismLandlock.
	Mechanism string
	// Writable are the paths writable inside the boundary (empty under
	// SandboxReadOnly).
	Writable []string
	// DenyRead are the paths made unreadable: a directory is hidden under
	// an empty one, a file under an empty file.
	DenyRead []string
	// Network is a --sandbox-network value in its canonical form
	// (ParseNetProfile): host, none, model or allow=…; "" is host.
	Network string
	// ProxySocket is the host's filtering proxy's Unix socket, absolute,
	// when Network is model or allow=… (docs/sandbox.md#network); the
	// plugin binds it into the sandbox and relays the runtime's
	// connections to it.
	ProxySocket string
	// ModelEndpoints are the host:port destinations --sandbox-network
	// model allows; the plugin fills them from its runtime's config.
	ModelEndpoints []NetDest
	// RuntimeDirs are the runtime's own state and config directories, which
	// must stay writable under SandboxWorkspace; the plugin sets them
	// (WithRuntimeDirs) and they are created when missing.
	RuntimeDirs []string
	// RuntimeFiles are files the plugin made for its runtime outside the
	// writable paths (a config under the host's /tmp, which the private
	// /tmp hides); they are bound read-only.
	RuntimeFiles []string
}

// Active reports whether s asks for a sandbox at all.
func (s Sandbox) Active() bool { return s.Profile != "" && s.Profile != SandboxOff }

// WithRuntimeDirs is s with dirs, the runtime's own state and config
// directories, kept writable. They matter under SandboxWorkspace only:
// read-only leaves nothing writable, off sandboxes nothing.
func (s Sandbox) WithRuntimeDirs(dirs ...string) Sandbox {
	if s.Profile != SandboxWorkspace {
		return s
	}
	s.RuntimeDirs = append(slices.Clone(s.RuntimeDirs), dirs...)
	return s
}

// ParseSandboxProfile checks a --sandbox value; "" is no sandbox (off).
func ParseSandboxProfile(v string) (SandboxProfile, error) {
	if v == "" {
		return SandboxOff, nil
	}
	for _, p := range SandboxProfiles {
		if string(p) == v {
			return p, nil
		}
	}
	return "", fmt.Errorf("invalid sandbox profile %q; valid profiles: off, workspace, read-only", v)
}

// ParseSandboxNetwork checks a --sandbox-network value ("" is host) and
// returns its canonical form (ParseNetProfile).
func ParseSandboxNetwork(v string) (string, error) {
	p, err := ParseNetProfile(v)
	if err != nil {
		return "", err
	}
	return p.String(), nil
}

// CheckSandbox refuses a sandbox b does not declare it can launch its
// runtime inside (CapSandbox), or one of a mechanism this SDK does not
// know. No sandbox is always accepted.
func CheckSandbox(b BackendInfo, s Sandbox) error {
	if !s.Active() {
		return nil
	}
	if _, err := ParseSandboxProfile(string(s.Profile)); err != nil {
		return err
	}
	if !slices.Contains(SandboxMechanisms, s.Mechanism) {
		return fmt.Errorf("sandbox mechanism %q is not supported; supported: %s, %s", s.Mechanism, MechanismBubblewrap, MechanismLandlock)
	}
	if b.Capability(CapSandbox) == Unsupported {
		return fmt.Errorf("backend %q cannot launch its runtime inside a sandbox (--sandbox %s); run it with --sandbox off or choose a backend that declares capability %q", b.Name, s.Profile, CapSandbox)
	}
	net, err := ParseNetProfile(s.Network)
	if err != nil {
		return err
	}
	if net.Kind == SandboxNetworkModel && b.Capability(CapSandboxNetworkModel) == Unsupported {
		return fmt.Errorf("backend %q cannot say which model endpoints its runtime uses (capability %q), so --sandbox-network model cannot allow them; name them with --sandbox-network allow=host:port", b.Name, CapSandboxNetworkModel)
	}
	return nil
}
