package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// Installed is a plugin copied into the install directory.
type Installed struct {
	Family, Version, Path string
	SHA256                string // "sha256:<hex>"
	// Replaced is the hash of a different binary that was installed as the
	// same version before; projects that pinned it refuse the new one until
	// they pin again. Empty when nothing, or the same binary, was there.
	Replaced string
}

// Install asks the binary at src who it is (Describe), then copies it to
// <installDir>/<family>/<version>/avenor-plugin-<family> (temp file, fsync,
// rename: never a half-written plugin) and records its hash beside it in
// <binary>.sha256. A binary that does not answer the plugin handshake is
// refused.
func Install(ctx context.Context, src, installDir string) (Installed, error) {
	c, err := plugin.Launch(ctx, plugin.LaunchConfig{Path: src, Logger: hclog.NewNullLogger()})
	if err != nil {
		if ie := incompatible(Found{Path: src, Family: familyOfBinary(src)}, err); ie != nil {
			return Installed{}, fmt.Errorf("%s is not a working avenor plugin: %w", src, ie)
		}
		return Installed{}, fmt.Errorf("%s is not a working avenor plugin: %w", src, err)
	}
	info := c.Info()
	c.Kill()
	if !plugin.ValidName(info.Name) || !validVersion(info.Version) {
		return Installed{}, fmt.Errorf("%s describes itself as %q version %q, which cannot be installed: the name must be lowercase letters, digits and _, the version letters, digits, '.', '-', '+' and '_'", src, info.Name, info.Version)
	}
	dir := filepath.Join(installDir, info.Name, info.Version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Installed{}, err
	}
	dest := filepath.Join(dir, BinaryPrefix+info.Name)
	previous := InstalledHash(dest)
	sum, err := copyAtomic(src, dest, 0o755)
	if err != nil {
		return Installed{}, fmt.Errorf("install %s: %w", dest, err)
	}
	hash := "sha256:" + sum
	if err := writeAtomic(dest+".sha256", []byte(hash+"\n"), 0o644); err != nil {
		return Installed{}, fmt.Errorf("install %s: %w", dest, err)
	}
	inst := Installed{Family: info.Name, Version: info.Version, Path: dest, SHA256: hash}
	if previous != "" && previous != hash {
		inst.Replaced = previous
	}
	return inst, nil
}

// familyOfBinary is the family a binary's file name claims, "" when it is
// not named avenor-plugin-<family>.
func familyOfBinary(path string) string {
	fam, ok := strings.CutPrefix(filepath.Base(path), BinaryPrefix)
	if !ok || !plugin.ValidName(fam) {
		return ""
	}
	return fam
}

// copyAtomic copies src to dest through a temp file in dest's directory and
// returns the hex SHA-256 of what it wrote.
func copyAtomic(src, dest string, mode os.FileMode) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), in); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".install-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
