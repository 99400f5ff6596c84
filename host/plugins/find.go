package plugins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// BinaryPrefix starts every plugin binary's name.
const BinaryPrefix = "avenor-plugin-"

// Where a plugin binary was found.
const (
	SourcePinned     = "pinned"
	SourcePluginPath = "AVENOR_PLUGIN_PATH"
	SourceInstalled  = "installed"
	SourceExeDir     = "next to avenor"
	SourcePATH       = "PATH"
)

// Finder knows where plugin binaries may live. Build one with NewFinder or
// fill it in tests; zero fields are skipped.
type Finder struct {
	PluginPath []string          // AVENOR_PLUGIN_PATH entries
	InstallDir string            // <data>/plugins
	ExeDir     string            // directory of the running avenor binary
	PATH       []string          // PATH entries
	Families   map[string]string // backend name → plugin family, from config
	// Lock holds the project's pins, consulted before anything else: a
	// pinned family resolves to exactly its pinned binary, or to a
	// *PinError, never to another binary. Nil: no project, no pins.
	Lock *Lock
	// Logger gets, at debug level, the binary Find chose for a backend and
	// the lock entry that pinned it (AVENOR_LOG=debug); nil logs nothing.
	Logger hclog.Logger
}

// Found is one plugin binary.
type Found struct {
	Family  string
	Path    string
	Source  string // one of the Source constants
	Version string // the install directory's version (SourceInstalled) or the pinned version (SourcePinned)
	// Pin is the project's pin (SourcePinned only): Launch refuses to exec a
	// binary whose checksum differs from Pin.Hash.
	Pin *Pin
	// LockFile is the lock file that pinned it (SourcePinned only).
	LockFile string
}

// ErrNotFound is returned (wrapped in *NotFoundError) when no binary serves a backend.
var ErrNotFound = errors.New("no plugin found")

// UnknownBackendError is the run's message for a backend no plugin
// serves: `unknown backend "X"` and then where avenor looked (docs/run.md#validation).
// A pin error is not that: it is returned as it is.
func UnknownBackendError(backend string, err error) error {
	var nf *NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	return fmt.Errorf("unknown backend %q\n%w", backend, err)
}

// NotFoundError lists where avenor looked.
type NotFoundError struct {
	Backend, Family string
	Looked          []string
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no plugin binary %s%s serves backend %q; looked in:", BinaryPrefix, e.Family, e.Backend)
	for _, l := range e.Looked {
		b.WriteString("\n  " + l)
	}
	fmt.Fprintf(&b, "\ninstall it with `avenor plugin install <path-to-%s%s>`, put its directory on AVENOR_PLUGIN_PATH, or place it next to avenor",
		BinaryPrefix, e.Family)
	return b.String()
}

func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// NewFinder builds the standard finder from the environment.
func NewFinder(getenv func(string) string, installDir string, families map[string]string) Finder {
	f := Finder{InstallDir: installDir, Families: families}
	f.PluginPath = splitList(getenv("AVENOR_PLUGIN_PATH"))
	f.PATH = splitList(getenv("PATH"))
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		f.ExeDir = filepath.Dir(exe)
	}
	return f
}

func splitList(s string) []string {
	var out []string
	for _, p := range filepath.SplitList(s) {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Family is the plugin family serving backend: the config mapping, else the
// first word of the name.
func (f Finder) Family(backend string) string {
	if fam, ok := f.Families[backend]; ok && fam != "" {
		return fam
	}
	return DefaultFamily(backend)
}

// DefaultFamily is the first word of a backend name.
func DefaultFamily(backend string) string {
	if i := strings.IndexByte(backend, '-'); i > 0 {
		return backend[:i]
	}
	return backend
}

// Find returns the binary that serves backend: the project's pin when the
// family is pinned (or a *PinError), else the first binary in the search
// order (or a *NotFoundError).
func (f Finder) Find(backend string) (Found, error) {
	found, err := f.find(backend)
	if f.Logger != nil {
		switch {
		case err != nil:
			f.Logger.Debug("no plugin binary for backend", "backend", backend, "family", f.Family(backend), "error", err)
		case found.Pin != nil:
			f.Logger.Debug("plugin binary chosen", "backend", backend, "family", found.Family, "path", found.Path, "source", found.Source,
				"lock_file", found.LockFile, "pinned_version", found.Pin.Version, "pinned_hash", found.Pin.Hash)
		default:
			f.Logger.Debug("plugin binary chosen", "backend", backend, "family", found.Family, "path", found.Path, "source", found.Source,
				"version", found.Version)
		}
	}
	return found, err
}

func (f Finder) find(backend string) (Found, error) {
	family := f.Family(backend)
	if !plugin.ValidName(family) {
		return Found{}, &NotFoundError{Backend: backend, Family: family, Looked: []string{"(not a valid plugin name)"}}
	}
	if f.Lock != nil {
		if p, ok := f.Lock.Pins[family]; ok {
			return f.pinned(p)
		}
	}
	name := BinaryPrefix + family
	var looked []string
	for _, dir := range f.PluginPath {
		if p, ok := executable(filepath.Join(dir, name)); ok {
			return Found{Family: family, Path: p, Source: SourcePluginPath}, nil
		}
		looked = append(looked, dir+" (AVENOR_PLUGIN_PATH)")
	}
	if len(f.PluginPath) == 0 {
		looked = append(looked, "AVENOR_PLUGIN_PATH (unset)")
	}
	if f.InstallDir != "" {
		if found, ok := f.installed(family); ok {
			return found, nil
		}
		looked = append(looked, filepath.Join(f.InstallDir, family, "<version>")+" (installed plugins)")
	}
	if f.ExeDir != "" {
		if p, ok := executable(filepath.Join(f.ExeDir, name)); ok {
			return Found{Family: family, Path: p, Source: SourceExeDir}, nil
		}
		looked = append(looked, f.ExeDir+" (next to avenor)")
	}
	for _, dir := range f.PATH {
		if p, ok := executable(filepath.Join(dir, name)); ok {
			return Found{Family: family, Path: p, Source: SourcePATH}, nil
		}
	}
	looked = append(looked, "PATH")
	return Found{}, &NotFoundError{Backend: backend, Family: family, Looked: looked}
}

// installed returns the highest installed version of family.
func (f Finder) installed(family string) (Found, bool) {
	versions := InstalledVersions(f.InstallDir, family)
	for i := len(versions) - 1; i >= 0; i-- {
		p := filepath.Join(f.InstallDir, family, versions[i], BinaryPrefix+family)
		if p, ok := executable(p); ok {
			return Found{Family: family, Path: p, Source: SourceInstalled, Version: versions[i]}, true
		}
	}
	return Found{}, false
}

// InstalledVersions lists the version directories of family that hold its
// binary, lowest first.
func InstalledVersions(installDir, family string) []string {
	entries, err := os.ReadDir(filepath.Join(installDir, family))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || !validVersion(e.Name()) {
			continue
		}
		if _, err := os.Stat(filepath.Join(installDir, family, e.Name(), BinaryPrefix+family)); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Slice(out, func(i, j int) bool { return CompareVersions(out[i], out[j]) < 0 })
	return out
}

// All lists every plugin family found, the first location winning per
// family, sorted by family.
func (f Finder) All() []Found {
	seen := map[string]bool{}
	var out []Found
	if f.Lock != nil {
		// A pinned family is listed as its pin, even when the pinned
		// binary is broken (Found.Path then names what is missing).
		for fam, p := range f.Lock.Pins {
			fd, err := f.pinned(p)
			if err != nil {
				fd = Found{Family: fam, Path: f.Lock.BinaryPath(p, f.InstallDir), Source: SourcePinned, Version: p.Version, Pin: &p, LockFile: f.Lock.File()}
			}
			seen[fam] = true
			out = append(out, fd)
		}
	}
	add := func(fd Found) {
		if !seen[fd.Family] {
			seen[fd.Family] = true
			out = append(out, fd)
		}
	}
	scan := func(dir, source string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			fam, ok := strings.CutPrefix(e.Name(), BinaryPrefix)
			if !ok || !plugin.ValidName(fam) {
				continue
			}
			if p, ok := executable(filepath.Join(dir, e.Name())); ok {
				add(Found{Family: fam, Path: p, Source: source})
			}
		}
	}
	for _, d := range f.PluginPath {
		scan(d, SourcePluginPath)
	}
	if f.InstallDir != "" {
		if entries, err := os.ReadDir(f.InstallDir); err == nil {
			for _, e := range entries {
				if fd, ok := f.installed(e.Name()); ok {
					add(fd)
				}
			}
		}
	}
	if f.ExeDir != "" {
		scan(f.ExeDir, SourceExeDir)
	}
	for _, d := range f.PATH {
		scan(d, SourcePATH)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Family < out[j].Family })
	return out
}

func executable(p string) (string, bool) {
	st, err := os.Stat(p)
	if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return "", false
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p, true
	}
	return abs, true
}

// CompareVersions orders dotted versions numerically ("1.10.0" > "1.9.2"),
// ignoring a leading "v"; non-numeric parts compare as strings.
func CompareVersions(a, b string) int {
	pa := strings.Split(strings.TrimPrefix(a, "v"), ".")
	pb := strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y string
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		xi, errx := strconv.Atoi(x)
		yi, erry := strconv.Atoi(y)
		switch {
		case errx == nil && erry == nil:
			if xi != yi {
				if xi < yi {
					return -1
				}
				return 1
			}
		case x != y:
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
