package sandbox

import (
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the denial classifier (docs/configuration.md#bounds): it reads
// outside input, a tool's output, so it reads only so much of it.
const (
	// MaxDenialScanBytes is how much of one tool output, or one launch
	// error, is searched for denials; the rest is not read.
	MaxDenialScanBytes = 64 << 10
	// MaxDenialsPerOutput is how many denials one tool output, or one
	// launch error, reports at most.
	MaxDenialsPerOutput = 8
	// MaxDenialMessageBytes bounds a launch denial's message.
	MaxDenialMessageBytes = 512
)

// Denial operations: what the boundary refused (avenor.sandbox.denied's op).
const (
	// OpWrite: a write to a path outside the writable paths.
	OpWrite = "write"
	// OpRead: a read of a path on the deny list.
	OpRead = "read"
	// OpLaunch: the mechanism itself (bwrap) failed to set the boundary up.
	OpLaunch = "launch"
)

// Denial is one access the boundary refused, as a tool's output or the
// launcher's error shows it.
type Denial struct {
	// Op is OpWrite, OpRead or OpLaunch.
	Op string
	// Path is the path refused, absolute and clean; for OpLaunch the path
	// bwrap named, or "bwrap" when it named none, or "landlock" when the
	// Landlock launcher failed.
	Path string
	// Message is the launcher's own line (OpLaunch only), bounded by
	// MaxDenialMessageBytes.
	Message string
}

// errno kinds a line of output shows.
type errKind int

const (
	errNone     errKind = iota
	errReadOnly         // EROFS
	errDenied           // EACCES, EPERM
	errMissing          // ENOENT: how a hidden deny-list entry looks to bubblewrap's runtime
)

// kindOf is the errno a lower-cased line of output reports, the strongest
// first: "Read-only file system" names the boundary outright. Besides the
// C library's and node's wording, a runtime's file tools may word it as
// Effect's system errors do ("PermissionDenied: FileSystem.open (/p)",
// "NotFound: …": opencode 1.18's read and write tools) or as their own
// ("File not found: /p": opencode's read tool).
func kindOf(lower string) errKind {
	switch {
	case strings.Contains(lower, "read-only file system"), strings.Contains(lower, "erofs"):
		return errReadOnly
	case strings.Contains(lower, "permission denied"), strings.Contains(lower, "operation not permitted"),
		strings.Contains(lower, "eacces"), strings.Contains(lower, "eperm"), strings.Contains(lower, "permissiondenied"):
		return errDenied
	case strings.Contains(lower, "no such file or directory"), strings.Contains(lower, "enoent"),
		strings.Contains(lower, "notfound"), strings.Contains(lower, "file not found"):
		return errMissing
	}
	return errNone
}

// Denials are the accesses sb refused that text, a tool's output, shows:
// a line reporting EROFS, EACCES or EPERM on an absolute path outside sb's
// writable paths is a write denied; one reporting any of those, or ENOENT,
// on a path on the deny list is a read denied (bubblewrap hides a deny-list
// entry under an empty directory or file, so a read of it looks like a
// missing file). A line of bwrap's own ("bwrap: …") is a launch denied.
// Paths under the private /tmp, /dev and /proc are the sandbox's own and
// never reported; a path written relative is not either (where it lies is
// the tool's to know). Each (op, path) is reported once, at most
// MaxDenialsPerOutput of them, from the first MaxDenialScanBytes of text.
// No sandbox denies nothing.
func Denials(sb sdk.Sandbox, text string) []Denial {
	if !sb.Active() || text == "" {
		return nil
	}
	if len(text) > MaxDenialScanBytes {
		text = text[:MaxDenialScanBytes]
	}
	var out []Denial
	seen := map[Denial]bool{}
	add := func(d Denial) bool {
		key := Denial{Op: d.Op, Path: d.Path}
		if !seen[key] {
			seen[key] = true
			out = append(out, d)
		}
		return len(out) < MaxDenialsPerOutput
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if d, ok := launchDenial(line); ok {
			if !add(d) {
				return out
			}
			continue
		}
		if d, ok := landlockLaunchDenial(line); ok {
			if !add(d) {
				return out
			}
			continue
		}
		kind := kindOf(strings.ToLower(line))
		if kind == errNone {
			continue
		}
		for _, p := range errorPaths(line) {
			op := classify(sb, p, kind)
			if op != "" && !add(Denial{Op: op, Path: p}) {
				return out
			}
		}
	}
	return out
}

// LaunchDenials are the launch denials in text, a launcher's error: the
// lines bwrap wrote of its own failure to set the boundary up.
func LaunchDenials(sb sdk.Sandbox, text string) []Denial {
	var out []Denial
	for _, d := range Denials(sb, text) {
		if d.Op == OpLaunch {
			out = append(out, d)
		}
	}
	return out
}

// FailedEditDenial is the denial a failed edit of path shows: a runtime
// whose file tool words its error without the errno (opencode 1.18:
// "Unknown: FileSystem.writeFile (/path)") still failed to write a path
// outside sb's writable paths, which only the boundary refuses. ok is
// false for a path the boundary lets be written, or one it does not place.
func FailedEditDenial(sb sdk.Sandbox, path string) (d Denial, ok bool) {
	if !sb.Active() || !filepath.IsAbs(path) {
		return Denial{}, false
	}
	p := filepath.Clean(path)
	if op := classify(sb, p, errReadOnly); op != "" {
		return Denial{Op: op, Path: p}, true
	}
	return Denial{}, false
}

// launchDenial reads a line bwrap wrote about itself ("bwrap: Can't bind
// mount /oldroot/x on /newroot/x: No such file or directory"), wherever it
// stands in the line (an error may quote it after its own words).
func launchDenial(line string) (Denial, bool) {
	i := strings.Index(line, "bwrap: ")
	if i < 0 || (i > 0 && !strings.ContainsRune(" \t:(\"'`", rune(line[i-1]))) {
		return Denial{}, false
	}
	msg := strings.TrimSpace(line[i:])
	if len(msg) > MaxDenialMessageBytes {
		msg = sdk.Truncate(msg, MaxDenialMessageBytes)
	}
	d := Denial{Op: OpLaunch, Path: "bwrap", Message: msg}
	if paths := absPaths(line[i:]); len(paths) > 0 {
		// bwrap names the paths as it sees them while it builds the new
		// root; the user's path is the one under it (the first it names).
		p := paths[0]
		for _, root := range []string{"/oldroot", "/newroot"} {
			if rest, ok := strings.CutPrefix(p, root); ok && strings.HasPrefix(rest, "/") {
				p = rest
			}
		}
		d.Path = p
	}
	return d, true
}

// landlockLaunchDenial reads the line the Landlock launcher wrote when it
// could not set the boundary up (agentproc.LandlockLaunchFailed): a launch
// denial of "landlock".
func landlockLaunchDenial(line string) (Denial, bool) {
	i := strings.Index(line, agentproc.LandlockLaunchFailed)
	if i < 0 {
		return Denial{}, false
	}
	msg := strings.TrimSpace(line[i:])
	if len(msg) > MaxDenialMessageBytes {
		msg = sdk.Truncate(msg, MaxDenialMessageBytes)
	}
	return Denial{Op: OpLaunch, Path: sdk.MechanismLandlock, Message: msg}, true
}

// classify is the op a refused access of p that failed with kind shows
// under sb, "" when it is no denial of the boundary.
func classify(sb sdk.Sandbox, p string, kind errKind) string {
	if ownPath(p) && !(sb.Mechanism == sdk.MechanismLandlock && under(p, []string{"/tmp"})) {
		// Under Landlock /tmp is the host's, not writable: a refusal
		// there is the boundary's.
		return ""
	}
	denied := under(p, sb.DenyRead)
	writable := sb.Profile == sdk.SandboxWorkspace && (under(p, sb.Writable) || under(p, sb.RuntimeDirs))
	switch {
	case kind == errReadOnly && !writable:
		return OpWrite
	case denied:
		return OpRead
	case kind == errDenied && !writable:
		return OpWrite
	}
	return ""
}

// ownPath: p lies where the sandbox has its own filesystems (the private
// /tmp, /dev, /proc), whose errors are not the boundary's.
func ownPath(p string) bool {
	return under(p, []string{"/tmp", "/dev", "/proc"})
}

// under: p is one of roots or lies beneath one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		if p == r || r == "/" || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// errorPaths are the paths an error line names as refused: absPaths but
// the program that reports it, when the line begins with its absolute path
// and names another ("/bin/sh: 1: cannot create /x: Read-only file
// system"): the shell is the one speaking, not the path refused.
func errorPaths(line string) []string {
	paths := absPaths(line)
	if len(paths) > 1 {
		if prog, _, ok := strings.Cut(line, ": "); ok && !strings.ContainsAny(prog, " \t") && filepath.Clean(prog) == paths[0] {
			return paths[1:]
		}
	}
	return paths
}

// absPaths are the absolute paths a line of output names: each run of
// characters that starts with "/" at the start of a word (after a space,
// a quote, a colon, an equals sign or a bracket) and ends before a space,
// a quote, a colon, a comma, a semicolon or a closing bracket; cleaned.
// "/" alone is not a path worth reporting, nor a URL's "//host/…".
func absPaths(line string) []string {
	var out []string
	for i := 0; i < len(line); i++ {
		if line[i] != '/' || (i > 0 && !strings.ContainsRune(" \t'\"`:=([{<", rune(line[i-1]))) {
			continue
		}
		j := i
		for j < len(line) && !strings.ContainsRune(" \t'\"`:,;)]}>", rune(line[j])) {
			j++
		}
		// "//" starts a URL's host (http://h/p), not a path.
		if p := filepath.Clean(line[i:j]); p != "/" && !strings.HasPrefix(line[i:j], "//") {
			out = append(out, p)
		}
		i = j
	}
	return out
}
