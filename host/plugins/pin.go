package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Errors of pinned plugins; *PinError wraps one of them.
var (
	// ErrPinMissing: the pinned version (or development build) is not there.
	ErrPinMissing = errors.New("pinned plugin is missing")
	// ErrPinMismatch: the binary's hash is not the pinned hash.
	ErrPinMismatch = errors.New("plugin does not match its pin")
)

// PinError says which pin failed, how, and how to fix it. It is the user's
// to fix: avenor never falls back to another binary.
type PinError struct {
	Pin       Pin
	LockFile  string
	Binary    string   // where the pinned binary should be
	Got       string   // the binary's actual hash, for a mismatch
	Installed []string // installed versions of the family, for a missing pin
	Err       error    // ErrPinMissing or ErrPinMismatch
	Cause     error    // what reading the binary failed with, if anything
}

func (e *PinError) Unwrap() error { return e.Err }

func (e *PinError) Error() string {
	p := e.Pin
	var b strings.Builder
	what := fmt.Sprintf("plugin %s %s", p.Family, p.Version)
	if p.Path != "" {
		what = fmt.Sprintf("development build of plugin %s (%s)", p.Family, p.Version)
	}
	switch {
	case errors.Is(e.Err, ErrPinMismatch):
		fmt.Fprintf(&b, "%s at %s does not match its pin in %s: pinned %s, found %s; avenor will not run it. ",
			what, e.Binary, e.LockFile, p.Hash, e.Got)
		if p.Path != "" {
			fmt.Fprintf(&b, "A development build changes with every build: re-pin it with `avenor plugin use --path %s`, or remove the pin with `avenor plugin unpin %s`", e.Binary, p.Family)
		} else {
			fmt.Fprintf(&b, "The binary changed after it was pinned: reinstall the release you trust with `avenor plugin install <path-to-%s%s>`, "+
				"or, if this binary is the one you want, re-pin it with `avenor plugin use %s@%s`", BinaryPrefix, p.Family, p.Family, p.Version)
		}
	default:
		fmt.Fprintf(&b, "%s is pinned in %s, but %s", what, e.LockFile, e.Binary)
		if e.Cause != nil && !errors.Is(e.Cause, os.ErrNotExist) {
			fmt.Fprintf(&b, " cannot be read (%v)", e.Cause)
		} else {
			b.WriteString(" does not exist")
		}
		b.WriteString("; avenor will not fall back to another version. ")
		if p.Path != "" {
			fmt.Fprintf(&b, "Rebuild it and re-pin it with `avenor plugin use --path <binary>`, or remove the pin with `avenor plugin unpin %s`", p.Family)
		} else {
			installed := "none"
			if len(e.Installed) > 0 {
				installed = strings.Join(e.Installed, ", ")
			}
			fmt.Fprintf(&b, "Install that version with `avenor plugin install <path-to-%s%s>`, pin an installed version with `avenor plugin use %s@<version>` (installed: %s), or remove the pin with `avenor plugin unpin %s`",
				BinaryPrefix, p.Family, p.Family, installed, p.Family)
		}
	}
	return b.String()
}

// pinned resolves a pin to its binary and checks the binary's hash before
// anything runs it (Launch checks again, the very bytes it runs).
func (f Finder) pinned(p Pin) (Found, error) {
	bin := f.Lock.BinaryPath(p, f.InstallDir)
	perr := &PinError{Pin: p, LockFile: f.Lock.File(), Binary: bin}
	sum, err := FileHash(bin)
	if err != nil {
		perr.Err, perr.Cause = ErrPinMissing, err
		if f.InstallDir != "" {
			perr.Installed = InstalledVersions(f.InstallDir, p.Family)
		}
		return Found{}, perr
	}
	if sum != p.Hash {
		perr.Err, perr.Got = ErrPinMismatch, sum
		return Found{}, perr
	}
	if _, ok := executable(bin); !ok {
		perr.Err, perr.Cause = ErrPinMissing, fmt.Errorf("%s is not executable", bin)
		return Found{}, perr
	}
	return Found{Family: p.Family, Path: bin, Source: SourcePinned, Version: p.Version, Pin: &p, LockFile: f.Lock.File()}, nil
}

// FileHash is the "sha256:<hex>" hash of a file.
func FileHash(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// InstalledHash is the hash recorded beside an installed binary when it was
// installed ("" when there is none).
func InstalledHash(binary string) string {
	data, err := os.ReadFile(binary + ".sha256")
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(data))
	if !validHash(h) {
		return ""
	}
	return h
}
