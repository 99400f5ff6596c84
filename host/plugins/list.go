package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"sort"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// FamilyStatus is one plugin family as `avenor plugin list` shows it: what
// is installed, what the project pins, and which binary a run here uses.
type FamilyStatus struct {
	Family    string             `json:"family"`
	Installed []InstalledVersion `json:"installed"`
	// Pin is the project's pin; nil when the family is not pinned.
	Pin *PinStatus `json:"pin"`
	// Used is the binary a run here launches; nil when there is none (see
	// Error).
	Used *UsedBinary `json:"used"`
	// Error says why no binary can run: a broken pin, nothing found.
	Error string `json:"error,omitempty"`
}

// InstalledVersion is one version in the install directory.
type InstalledVersion struct {
	Version string `json:"version"`
	Path    string `json:"path"`
	Hash    string `json:"hash,omitempty"` // recorded at install
}

// PinStatus is a pin as the lock file has it.
type PinStatus struct {
	Version  string `json:"version"`
	Hash     string `json:"hash"`
	Path     string `json:"path,omitempty"` // development build
	LockFile string `json:"lock_file"`
}

// UsedBinary is the binary a run launches and why that one.
type UsedBinary struct {
	Path    string `json:"path"`
	Version string `json:"version,omitempty"` // known for pinned and installed binaries
	Source  string `json:"source"`            // a Source constant
	Pinned  bool   `json:"pinned"`
	Why     string `json:"why"`
}

// Status lists every family that is installed, pinned or found on a path,
// sorted by family.
func (f Finder) Status() []FamilyStatus {
	families := map[string]bool{}
	if f.InstallDir != "" {
		if entries, err := os.ReadDir(f.InstallDir); err == nil {
			for _, e := range entries {
				if e.IsDir() && plugin.ValidName(e.Name()) && len(InstalledVersions(f.InstallDir, e.Name())) > 0 {
					families[e.Name()] = true
				}
			}
		}
	}
	if f.Lock != nil {
		for fam := range f.Lock.Pins {
			families[fam] = true
		}
	}
	for _, fd := range f.All() {
		families[fd.Family] = true
	}
	names := make([]string, 0, len(families))
	for fam := range families {
		names = append(names, fam)
	}
	sort.Strings(names)

	out := make([]FamilyStatus, 0, len(names))
	for _, fam := range names {
		st := FamilyStatus{Family: fam, Installed: []InstalledVersion{}}
		for _, v := range InstalledVersions(f.InstallDir, fam) {
			p := filepath.Join(f.InstallDir, fam, v, BinaryPrefix+fam)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			st.Installed = append(st.Installed, InstalledVersion{Version: v, Path: p, Hash: InstalledHash(p)})
		}
		if f.Lock != nil {
			if p, ok := f.Lock.Pins[fam]; ok {
				st.Pin = &PinStatus{Version: p.Version, Hash: p.Hash, Path: p.Path, LockFile: f.Lock.File()}
			}
		}
		// The family name is its own backend name: no config mapping.
		g := f
		g.Families = nil
		found, err := g.Find(fam)
		if err != nil {
			var nf *NotFoundError
			if errors.As(err, &nf) {
				st.Error = "no binary found"
			} else {
				st.Error = err.Error()
			}
		} else {
			st.Used = &UsedBinary{Path: found.Path, Version: found.Version, Source: found.Source, Pinned: found.Source == SourcePinned, Why: why(found)}
		}
		out = append(out, st)
	}
	return out
}

func why(fd Found) string {
	switch fd.Source {
	case SourcePinned:
		return "pinned in " + fd.LockFile
	case SourceInstalled:
		return "highest installed version (unpinned)"
	case SourcePluginPath:
		return "found on AVENOR_PLUGIN_PATH (unpinned)"
	case SourceExeDir:
		return "found next to avenor (unpinned)"
	case SourcePATH:
		return "found on PATH (unpinned)"
	}
	return fd.Source
}
