package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// ProjectMarker is the directory that makes a directory an avenor project.
const ProjectMarker = ".avenor"

// Dirs are avenor's per-user directories.
type Dirs struct {
	Config string // $XDG_CONFIG_HOME/avenor, else ~/.config/avenor
	Data   string // $XDG_DATA_HOME/avenor, else ~/.local/share/avenor
	State  string // $XDG_STATE_HOME/avenor, else ~/.local/state/avenor
}

// DefaultDirs locates avenor's directories from the environment as env reads
// it (pass os.Getenv; nil reads as an empty environment). Following the XDG
// base directory spec, an XDG variable that is unset, empty or not an
// absolute path is ignored in favour of the fallback under $HOME.
func DefaultDirs(env func(string) string) (Dirs, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	home := env("HOME")
	base := func(xdg string, fallback ...string) (string, error) {
		if v := env(xdg); v != "" && filepath.IsAbs(v) {
			return filepath.Join(v, "avenor"), nil
		}
		if home == "" || !filepath.IsAbs(home) {
			reason := "$HOME is not set"
			if home != "" {
				reason = fmt.Sprintf("$HOME %q is not an absolute path", home)
			}
			return "", &detailError{
				msg:  fmt.Sprintf("%s: %s and $%s is not set to an absolute path", ErrNoHome, reason, xdg),
				kind: ErrNoHome,
			}
		}
		return filepath.Join(append(append([]string{home}, fallback...), "avenor")...), nil
	}
	var d Dirs
	var err error
	if d.Config, err = base("XDG_CONFIG_HOME", ".config"); err != nil {
		return Dirs{}, err
	}
	if d.Data, err = base("XDG_DATA_HOME", ".local", "share"); err != nil {
		return Dirs{}, err
	}
	if d.State, err = base("XDG_STATE_HOME", ".local", "state"); err != nil {
		return Dirs{}, err
	}
	return d, nil
}

// UserConfigFile is the user's config file, Config/config.toml.
func (d Dirs) UserConfigFile() string { return filepath.Join(d.Config, "config.toml") }

// PluginDir holds installed plugins, as <family>/<version>/ beneath it.
func (d Dirs) PluginDir() string { return filepath.Join(d.Data, "plugins") }

// PluginStateDir is where the plugin family keeps whatever it must keep
// between processes. The family is not validated here; callers pass names
// they have already checked (a "../x" would escape State).
func (d Dirs) PluginStateDir(family string) string {
	return filepath.Join(d.State, "plugins", family)
}

// ProjectConfigFile is the project's config file, <project>/.avenor/config.toml.
func ProjectConfigFile(project string) string {
	return filepath.Join(project, ProjectMarker, "config.toml")
}

// FindProject returns the nearest directory, from start upwards, that holds a
// .avenor/ directory. start is made absolute against the working directory;
// symbolic links are not resolved. A .avenor that is a file does not count.
func FindProject(start string) (dir string, ok bool) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", false
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, ProjectMarker)); err == nil && fi.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
