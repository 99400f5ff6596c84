package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the sandbox's paths (docs/configuration.md#bounds).
const (
	// MaxAllowWrite bounds --sandbox-allow-write's paths.
	MaxAllowWrite = 64
	// MaxDenyRead bounds --sandbox-deny-read's paths.
	MaxDenyRead = 64
)

// DefaultDenyRead are the secrets under $HOME a sandbox hides whatever
// the profile (docs/sandbox.md#deny-list): SSH keys, cloud and cluster
// credentials, git and netrc credentials, GnuPG keys, registry tokens.
var DefaultDenyRead = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json",
	".git-credentials", ".config/git/credentials", ".netrc", ".config/gh/hosts.yml",
	".npmrc", ".pypirc",
}

// Request is what the run asked for: the flags and config keys of
// docs/run.md#sandbox, and where the run works.
type Request struct {
	// Profile is --sandbox: off, workspace or read-only; "" is off.
	Profile string
	// Network is --sandbox-network: host, none, model or
	// allow=host[:port],…; "" is host.
	Network string
	// AllowWrite are --sandbox-allow-write's paths: absolute, existing.
	AllowWrite []string
	// DenyRead are --sandbox-deny-read's paths, hidden besides
	// DefaultDenyRead: absolute.
	DenyRead []string
	// Dir is the run's working directory, absolute.
	Dir string
	// Home is $HOME, under which DefaultDenyRead lies; "" hides none of it.
	Home string
}

// Resolve checks r and turns it into the boundary the plugin launches its
// runtime in; flag names the setting in errors (e.g. "--sandbox"). Every
// path is made absolute with its symlinks resolved, so that a --dir that
// is a symlink binds its target, not a link the runtime could swap. Off is
// the zero Sandbox: nothing changes. Errors say what to fix.
func Resolve(r Request, flag func(string) string) (sdk.Sandbox, error) {
	profile, err := sdk.ParseSandboxProfile(r.Profile)
	if err != nil {
		return sdk.Sandbox{}, fmt.Errorf("%s: %w", flag("sandbox"), err)
	}
	network, err := sdk.ParseSandboxNetwork(r.Network)
	if err != nil {
		return sdk.Sandbox{}, fmt.Errorf("%s: %w", flag("sandbox_network"), err)
	}
	if profile == sdk.SandboxOff {
		if len(r.AllowWrite) > 0 || len(r.DenyRead) > 0 || r.Network != "" && network != sdk.SandboxNetworkHost {
			return sdk.Sandbox{}, fmt.Errorf("%s, %s and %s need %s workspace or read-only", flag("sandbox_network"), flag("sandbox_allow_write"), flag("sandbox_deny_read"), flag("sandbox"))
		}
		return sdk.Sandbox{}, nil
	}
	sb := sdk.Sandbox{Profile: profile, Mechanism: sdk.MechanismBubblewrap, Network: network}
	switch {
	case len(r.AllowWrite) > MaxAllowWrite:
		return sdk.Sandbox{}, fmt.Errorf("%s: %d paths is over the limit of %d", flag("sandbox_allow_write"), len(r.AllowWrite), MaxAllowWrite)
	case len(r.DenyRead) > MaxDenyRead:
		return sdk.Sandbox{}, fmt.Errorf("%s: %d paths is over the limit of %d", flag("sandbox_deny_read"), len(r.DenyRead), MaxDenyRead)
	case len(r.AllowWrite) > 0 && profile == sdk.SandboxReadOnly:
		return sdk.Sandbox{}, fmt.Errorf("%s: nothing is writable under %s read-only; use %s workspace", flag("sandbox_allow_write"), flag("sandbox"), flag("sandbox"))
	}
	if profile == sdk.SandboxWorkspace {
		dir, err := existing(flag("dir"), r.Dir)
		if err != nil {
			return sdk.Sandbox{}, err
		}
		sb.Writable = append(sb.Writable, dir)
		for _, p := range r.AllowWrite {
			p, err := existing(flag("sandbox_allow_write"), p)
			if err != nil {
				return sdk.Sandbox{}, err
			}
			if !slices.Contains(sb.Writable, p) {
				sb.Writable = append(sb.Writable, p)
			}
		}
	}
	var deny []string
	if r.Home != "" && filepath.IsAbs(r.Home) {
		for _, d := range DefaultDenyRead {
			deny = append(deny, filepath.Join(r.Home, d))
		}
	}
	for _, p := range r.DenyRead {
		if !filepath.IsAbs(p) {
			return sdk.Sandbox{}, fmt.Errorf("%s %q: give an absolute path", flag("sandbox_deny_read"), p)
		}
		deny = append(deny, filepath.Clean(p))
	}
	for _, p := range deny {
		// A deny path that is a symlink hides its target; one that does
		// not exist has nothing to hide and stays as given.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if !slices.Contains(sb.DenyRead, p) {
			sb.DenyRead = append(sb.DenyRead, p)
		}
	}
	return sb, nil
}

// existing is p, absolute and existing, with its symlinks resolved.
func existing(flag, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s %q: give an absolute path", flag, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s %s: no such file or directory; create it first or drop it", flag, p)
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", flag, p, err)
	}
	return real, nil
}

// AbsUnder is paths with each relative one made dir's, for path lists
// written relative to a file or a spawn's directory (a roster entry's
// sandbox_allow_write, avenor_spawn's). A nil list stays nil and an empty
// one empty: whether the key was given is the caller's to read.
func AbsUnder(dir string, paths []string) []string {
	if paths == nil {
		return nil
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out[i] = p
	}
	return out
}
