package agentproc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// SeatbeltBinary is macOS's sandbox-exec, which runs a program under a
// Seatbelt (SBPL) profile.
const SeatbeltBinary = "/usr/bin/sandbox-exec"

// SeatbeltProfile is the macOS Seatbelt profile for sb, with tmp the run's
// private temp dir: everything readable but the deny list; writable only
// the writable paths, the runtime's directories (workspace), tmp and the
// character devices every program writes; with network none, only the
// loopback. Later rules win in SBPL, so the deny list comes last and
// stays hidden inside a writable path, as under bubblewrap.
//
// It is built and tested here but not yet a mechanism the host chooses:
// on macOS a sandboxed run is still refused.
func SeatbeltProfile(sb runtime.Sandbox, tmp string) (string, error) {
	if !sb.Active() {
		return "", errors.New("agentproc: no sandbox asked for")
	}
	var writable []string
	switch sb.Profile {
	case runtime.SandboxWorkspace:
		writable = append(append(writable, sb.Writable...), sb.RuntimeDirs...)
	case runtime.SandboxReadOnly:
	default:
		return "", fmt.Errorf("agentproc: sandbox profile %q is not supported", sb.Profile)
	}
	writable = append(writable, tmp)
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*)\n(allow file-write*")
	for _, p := range writable {
		q, err := sbplPath(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "\n  (subpath %s)", q)
	}
	b.WriteString("\n  (literal \"/dev/null\") (literal \"/dev/zero\") (literal \"/dev/dtracehelper\") (regex #\"^/dev/tty\"))\n")
	if len(sb.DenyRead) > 0 {
		b.WriteString("(deny file-read* file-write*")
		for _, p := range sb.DenyRead {
			q, err := sbplPath(p)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "\n  (subpath %s)", q)
		}
		b.WriteString(")\n")
	}
	switch sb.Network {
	case "", runtime.SandboxNetworkHost:
	case runtime.SandboxNetworkNone:
		b.WriteString("(deny network*)\n(allow network* (local ip \"localhost:*\") (remote ip \"localhost:*\") (remote unix-socket))\n")
	default:
		return "", fmt.Errorf("agentproc: sandbox network %q is not supported", sb.Network)
	}
	return b.String(), nil
}

// sbplPath is p as an SBPL string: absolute, clean, no control character,
// its backslashes and quotes escaped.
func sbplPath(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", fmt.Errorf("agentproc: sandbox path %q is not absolute and clean", p)
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", fmt.Errorf("agentproc: sandbox path %q holds a control character", p)
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`, nil
}

// SeatbeltArgs is sandbox-exec's command line (without the program name)
// running argv, whose program is an absolute path, under profile.
func SeatbeltArgs(profile string, argv []string) []string {
	return append([]string{"-p", profile}, argv...)
}
