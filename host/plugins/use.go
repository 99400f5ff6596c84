package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// ErrNotInstalled: the version asked for is not installed.
var ErrNotInstalled = errors.New("plugin version not installed")

// ParseFamilyVersion splits "<family>@<version>"; the version may be
// absent ("echo": the highest installed).
func ParseFamilyVersion(s string) (family, version string, err error) {
	family, version, hasAt := strings.Cut(s, "@")
	switch {
	case !plugin.ValidName(family):
		return "", "", fmt.Errorf("%q: a plugin is named <family>@<version>, e.g. echo@1.0.0; the family is lowercase letters, digits and _", s)
	case hasAt && !validVersion(version):
		return "", "", fmt.Errorf("%q: %q is not an exact version, e.g. 1.0.0", s, version)
	}
	return family, version, nil
}

// PinInstalled pins family at version — the highest installed version when
// version is "" — in lock (not yet written), hashing the installed binary.
// An installed binary that no longer matches the hash recorded when it was
// installed is refused.
func PinInstalled(lock *Lock, installDir, family, version string) (Pin, error) {
	installed := InstalledVersions(installDir, family)
	if version == "" {
		if len(installed) == 0 {
			return Pin{}, kindErrorf(ErrNotInstalled, "no version of plugin %s is installed in %s; install one with `avenor plugin install <path-to-%s%s>`",
				family, installDir, BinaryPrefix, family)
		}
		version = installed[len(installed)-1]
	}
	bin := filepath.Join(installDir, family, version, BinaryPrefix+family)
	sum, err := FileHash(bin)
	if err != nil {
		have := "none"
		if len(installed) > 0 {
			have = strings.Join(installed, ", ")
		}
		return Pin{}, kindErrorf(ErrNotInstalled, "plugin %s %s is not installed (no %s; installed: %s); install it with `avenor plugin install <path-to-%s%s>`",
			family, version, bin, have, BinaryPrefix, family)
	}
	if rec := InstalledHash(bin); rec != "" && rec != sum {
		return Pin{}, kindErrorf(ErrPinMismatch, "installed %s no longer matches the hash recorded when it was installed (recorded %s, now %s); reinstall the release you trust with `avenor plugin install <binary>`",
			bin, rec, sum)
	}
	p := Pin{Family: family, Version: version, Hash: sum}
	return p, lock.Set(p)
}

// PinBinary pins a development build: the binary at path, whatever its
// version, by its hash. The binary is asked who it is (Describe); when
// family is not empty it must be that family. The pin records path relative
// to the project when it lies inside it.
func PinBinary(ctx context.Context, lock *Lock, path, family string) (Pin, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Pin{}, err
	}
	if st, err := os.Stat(abs); err != nil || st.IsDir() {
		return Pin{}, fmt.Errorf("--path %s: not a plugin binary (%v)", path, err)
	}
	c, err := plugin.Launch(ctx, plugin.LaunchConfig{Path: abs, Logger: hclog.NewNullLogger()})
	if err != nil {
		if ie := incompatible(Found{Path: abs, Family: familyOfBinary(abs)}, err); ie != nil {
			err = ie
		}
		return Pin{}, fmt.Errorf("--path %s is not a working avenor plugin: %w", path, err)
	}
	info := c.Info()
	c.Kill()
	switch {
	case family != "" && info.Name != family:
		return Pin{}, fmt.Errorf("--path %s is plugin %q, not %q", path, info.Name, family)
	case !plugin.ValidName(info.Name) || !validVersion(info.Version):
		return Pin{}, fmt.Errorf("--path %s describes itself as %q version %q, which cannot be pinned", path, info.Name, info.Version)
	}
	sum, err := FileHash(abs)
	if err != nil {
		return Pin{}, err
	}
	p := Pin{Family: info.Name, Version: info.Version, Hash: sum, Path: lock.RelPath(abs)}
	return p, lock.Set(p)
}

// kindError is a message that matches a sentinel without repeating it.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func kindErrorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
