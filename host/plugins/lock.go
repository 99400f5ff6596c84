package plugins

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gotoml "github.com/pelletier/go-toml/v2"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// LockFileName is the project's lock file, inside its .avenor/ directory.
const LockFileName = "plugins.lock"

// lockHeader opens every lock file avenor writes.
const lockHeader = `# avenor plugin lock file: the exact plugin binaries this project runs.
# Written by "avenor plugin use" and "avenor plugin unpin"; commit it.
# avenor checks each binary against its hash before it runs it.
`

// Pin is one plugin family pinned by a project.
type Pin struct {
	Family  string
	Version string // exact version, as the plugin's Describe reported it
	Hash    string // "sha256:<hex>" of the binary
	// Path is set for a development build pinned with --path: the binary
	// itself, relative to the project directory when it lies inside it.
	// Empty for an installed version (<data>/plugins/<family>/<version>/).
	Path string
}

// Lock is a project's .avenor/plugins.lock: at most one pin per family.
//
// The file is TOML, one table per family, sorted by family, keys in a fixed
// order, so that it diffs well and two writes of the same pins are the same
// bytes:
//
//	[plugins.echo]
//	version = "1.0.0"
//	hash = "sha256:0f3c…"
//
//	[plugins.mine]
//	version = "0.3.0-dev"
//	hash = "sha256:9a1b…"
//	path = "bin/avenor-plugin-mine"
type Lock struct {
	// Project is the directory holding .avenor/.
	Project string
	Pins    map[string]Pin
}

// LockPath is the lock file of project.
func LockPath(project string) string {
	return filepath.Join(project, ".avenor", LockFileName)
}

// File is the lock's path.
func (l *Lock) File() string { return LockPath(l.Project) }

// ReadLock reads project's lock file. A project without one has an empty
// lock; a malformed one is an error naming the file and what is wrong.
func ReadLock(project string) (*Lock, error) {
	l := &Lock{Project: project, Pins: map[string]Pin{}}
	data, err := os.ReadFile(l.File())
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugin lock file: %w", err)
	}
	if err := l.parse(data); err != nil {
		return nil, fmt.Errorf("plugin lock file %s: %w; fix it, or delete it and pin again with `avenor plugin use <family>@<version>`", l.File(), err)
	}
	return l, nil
}

type lockFile struct {
	Plugins map[string]lockEntry `toml:"plugins"`
}

type lockEntry struct {
	Version string `toml:"version"`
	Hash    string `toml:"hash"`
	Path    string `toml:"path"`
}

func (l *Lock) parse(data []byte) error {
	var lf lockFile
	dec := gotoml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&lf); err != nil {
		var de *gotoml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return fmt.Errorf("line %d column %d: %s", row, col, de.Error())
		}
		var se *gotoml.StrictMissingError
		if errors.As(err, &se) {
			return fmt.Errorf("unknown key: %s", strings.TrimSpace(se.String()))
		}
		return err
	}
	for family, e := range lf.Plugins {
		p := Pin{Family: family, Version: e.Version, Hash: e.Hash, Path: e.Path}
		if err := p.validate(); err != nil {
			return err
		}
		l.Pins[family] = p
	}
	return nil
}

func (p Pin) validate() error {
	switch {
	case !plugin.ValidName(p.Family):
		return fmt.Errorf("[plugins.%s]: %q is not a plugin family (lowercase letters, digits, _)", p.Family, p.Family)
	case !validVersion(p.Version):
		return fmt.Errorf("[plugins.%s]: version %q is not an exact version", p.Family, p.Version)
	case !validHash(p.Hash):
		return fmt.Errorf("[plugins.%s]: hash %q is not \"sha256:\" and 64 lowercase hex digits", p.Family, p.Hash)
	}
	return nil
}

// Set pins p.Family, replacing any earlier pin of it.
func (l *Lock) Set(p Pin) error {
	if err := p.validate(); err != nil {
		return err
	}
	if l.Pins == nil {
		l.Pins = map[string]Pin{}
	}
	l.Pins[p.Family] = p
	return nil
}

// Remove unpins family and reports whether it was pinned.
func (l *Lock) Remove(family string) bool {
	_, ok := l.Pins[family]
	delete(l.Pins, family)
	return ok
}

// Families lists the pinned families, sorted.
func (l *Lock) Families() []string {
	out := make([]string, 0, len(l.Pins))
	for f := range l.Pins {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// Marshal renders the lock: the header, then one table per family in
// order, keys in a fixed order.
func (l *Lock) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString(lockHeader)
	for _, f := range l.Families() {
		p := l.Pins[f]
		fmt.Fprintf(&b, "\n[plugins.%s]\nversion = %s\nhash = %s\n", f, tomlString(p.Version), tomlString(p.Hash))
		if p.Path != "" {
			fmt.Fprintf(&b, "path = %s\n", tomlString(p.Path))
		}
	}
	return b.Bytes()
}

// Write saves the lock atomically, creating .avenor/ when needed.
func (l *Lock) Write() error {
	if err := os.MkdirAll(filepath.Dir(l.File()), 0o755); err != nil {
		return err
	}
	return writeAtomic(l.File(), l.Marshal(), 0o644)
}

// BinaryPath is where the pinned binary lives: the installed version's
// binary, or the development build's path resolved against the project.
func (l *Lock) BinaryPath(p Pin, installDir string) string {
	if p.Path != "" {
		if filepath.IsAbs(p.Path) {
			return p.Path
		}
		return filepath.Join(l.Project, filepath.FromSlash(p.Path))
	}
	return filepath.Join(installDir, p.Family, p.Version, BinaryPrefix+p.Family)
}

// RelPath is how a development build's path is recorded: relative to the
// project (slash-separated) when inside it, so the lock works in any
// checkout; absolute otherwise.
func (l *Lock) RelPath(binary string) string {
	abs, err := filepath.Abs(binary)
	if err != nil {
		return binary
	}
	if rel, err := filepath.Rel(l.Project, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return abs
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// validVersion accepts what can name a version directory: letters,
// digits, ".", "-", "+", "_", not starting with "." or "-".
func validVersion(v string) bool {
	if v == "" || len(v) > 128 || v[0] == '.' || v[0] == '-' {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == '_') {
			return false
		}
	}
	return true
}

func validHash(h string) bool {
	hex, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for _, r := range hex {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}
