package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Recovery with approval (docs/sandbox.md#recovery): a denial that stops a
// step may be undone by widening the boundary by exactly one thing — one
// path made writable, or (the network's) one destination reached — and
// only after a person approved that one thing.

// Widening is the one thing a recovery asks to make reachable, and that an
// approval makes reachable: a write (Op OpWrite, Path the denied path,
// AllowWrite what becomes writable) or a connection (Op "connect",
// Destination the denied host:port).
type Widening struct {
	Op string
	// Path is the path whose write was denied, absolute and clean.
	Path string
	// Destination is the destination whose connection was denied.
	Destination string
	// AllowWrite is what the approval makes writable: Path itself when it
	// exists, else its directory (a file the step meant to create).
	AllowWrite string
}

// Key names the widening for "at most once per distinct path or
// destination".
func (w Widening) Key() string {
	if w.Op == OpConnect {
		return OpConnect + " " + w.Destination
	}
	return w.Op + " " + w.Path
}

// ErrNotWidenable: the denial cannot be undone by widening the boundary
// by one thing; no approval is asked for it.
var ErrNotWidenable = errors.New("the denial cannot be undone by widening the sandbox by one path or destination")

// PlanWrite is the widening that makes a denied write of path possible
// under sb, and nothing more: path itself when it exists (a file or a
// directory the step writes in), else the directory it would be created
// in, when that exists. It is ErrNotWidenable for a sandbox that is not
// workspace (read-only makes nothing writable), a relative path, a path
// whose directory does not exist either (making an ancestor writable
// would allow more than the step asked), the root, the sandbox's own
// /tmp, /dev and /proc, and a path on or under the deny list (its secrets stay hidden whatever is approved).
// Symlinks are resolved, as Resolve resolves --sandbox-allow-write.
func PlanWrite(sb sdk.Sandbox, path string) (Widening, error) {
	w := Widening{Op: OpWrite, Path: filepath.Clean(path)}
	switch {
	case sb.Profile != sdk.SandboxWorkspace:
		return w, fmt.Errorf("%w: --sandbox %s makes nothing writable", ErrNotWidenable, sb.Profile)
	case !filepath.IsAbs(path):
		return w, fmt.Errorf("%w: %q is not an absolute path", ErrNotWidenable, path)
	}
	target, err := filepath.EvalSymlinks(w.Path)
	if errors.Is(err, os.ErrNotExist) {
		target, err = filepath.EvalSymlinks(filepath.Dir(w.Path))
		if errors.Is(err, os.ErrNotExist) {
			return w, fmt.Errorf("%w: neither %s nor its directory exists", ErrNotWidenable, w.Path)
		}
	}
	if err != nil {
		return w, fmt.Errorf("%w: %s: %w", ErrNotWidenable, w.Path, err)
	}
	switch {
	case target == "/":
		return w, fmt.Errorf("%w: it would make the whole filesystem writable", ErrNotWidenable)
	case sandboxOwn(sb, target) || sandboxOwn(sb, w.Path):
		return w, fmt.Errorf("%w: %s lies in the sandbox's own /tmp, /dev or /proc", ErrNotWidenable, target)
	case under(target, sb.DenyRead):
		return w, fmt.Errorf("%w: %s is on the sandbox's deny list", ErrNotWidenable, target)
	}
	w.AllowWrite = target
	if _, err := Widen(sb, w); err != nil { // nothing is asked that cannot be done
		return w, err
	}
	return w, nil
}

// sandboxOwn: p lies where sb has filesystems of its own, which are never
// widened: the private /tmp (under bubblewrap; under Landlock /tmp is the
// host's), /dev and /proc. It mirrors what classify never reports.
func sandboxOwn(sb sdk.Sandbox, p string) bool {
	return ownPath(p) && !(sb.Mechanism == sdk.MechanismLandlock && under(p, []string{"/tmp"}))
}

// Widen is sb widened by w: w.AllowWrite added to its writable paths
// (once; at most MaxAllowWrite of them besides the run's dir), or
// w.Destination added to its allow= list (once; at most
// sdk.MaxNetworkAllow entries). A deny-list entry inside a new writable
// path stays hidden under bubblewrap, which applies the deny list last;
// Landlock cannot express that, and such a widening is ErrNotWidenable
// there.
func Widen(sb sdk.Sandbox, w Widening) (sdk.Sandbox, error) {
	if w.Op == OpConnect {
		return widenNetwork(sb, w.Destination)
	}
	if w.Op != OpWrite || w.AllowWrite == "" {
		return sb, fmt.Errorf("%w: op %q", ErrNotWidenable, w.Op)
	}
	if slices.Contains(sb.Writable, w.AllowWrite) {
		return sb, nil
	}
	if len(sb.Writable) >= MaxAllowWrite+1 { // the run's dir is one of them
		return sb, fmt.Errorf("%w: the sandbox already has %d writable paths", ErrNotWidenable, len(sb.Writable))
	}
	next := sb
	next.Writable = append(slices.Clone(sb.Writable), w.AllowWrite)
	if next.Mechanism == sdk.MechanismLandlock {
		if err := agentproc.LandlockExpressible(next); err != nil {
			return sb, fmt.Errorf("%w: %w", ErrNotWidenable, err)
		}
	}
	return next, nil
}

// Plan is the widening that would undo a denial of op (avenor.sandbox.
// denied's), with the path or destination it refused: PlanWrite for a
// write, PlanConnect for a connection; a read of the deny list or a
// launch never is.
func Plan(sb sdk.Sandbox, op, path, destination string) (Widening, error) {
	switch op {
	case OpWrite:
		return PlanWrite(sb, path)
	case OpConnect:
		return PlanConnect(sb, destination)
	}
	return Widening{Op: op, Path: path}, fmt.Errorf("%w: a %s denial is not undone by an approval", ErrNotWidenable, op)
}

// PlanConnect is the widening that lets a refused connection to
// destination (host:port, as the filtering proxy names it) through, and
// nothing more: that one host and port added to an allow= list. It is
// ErrNotWidenable under any other network profile — none stays none, and
// model allows what the runtime's configuration names, which an approval
// does not rewrite — and for a destination that is not one host:port.
func PlanConnect(sb sdk.Sandbox, destination string) (Widening, error) {
	w := Widening{Op: OpConnect, Destination: destination}
	if sb.Mechanism == sdk.MechanismLandlock {
		return w, fmt.Errorf("%w: Landlock refuses connections by port alone, with nothing to ask about", ErrNotWidenable)
	}
	p, err := sdk.ParseNetProfile(sb.Network)
	if err != nil || p.Kind != "allow" {
		return w, fmt.Errorf("%w: --sandbox-network %s is widened only as an allow= list", ErrNotWidenable, sb.Network)
	}
	d, err := sdk.ParseNetProfile("allow=" + destination)
	if err != nil || len(d.Allow) != 1 || d.Allow[0].Port == 0 {
		return w, fmt.Errorf("%w: %q is not one host:port", ErrNotWidenable, destination)
	}
	w.Destination = d.Allow[0].String()
	return w, nil
}

// widenNetwork is sb with destination added to its allow= list.
func widenNetwork(sb sdk.Sandbox, destination string) (sdk.Sandbox, error) {
	w, err := PlanConnect(sb, destination)
	if err != nil {
		return sb, err
	}
	p, _ := sdk.ParseNetProfile(sb.Network)
	for _, d := range p.Allow {
		if d.String() == w.Destination {
			return sb, nil
		}
	}
	if len(p.Allow) >= sdk.MaxNetworkAllow {
		return sb, fmt.Errorf("%w: the allow= list already has %d entries", ErrNotWidenable, len(p.Allow))
	}
	next, err := sdk.ParseNetProfile(sb.Network + "," + w.Destination)
	if err != nil {
		return sb, fmt.Errorf("%w: %w", ErrNotWidenable, err)
	}
	sb.Network = next.String()
	return sb, nil
}
