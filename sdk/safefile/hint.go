package safefile

import (
	"os"
	"path/filepath"
	"strings"
)

// relocateHint is the end of an error about a directory another user owns
// or planted: how to move avenor elsewhere. It names the environment
// variable the directory's location comes from — the one whose base holds
// dir most closely (TMPDIR, an XDG base directory or its default under
// HOME) — so that the advice fits a state directory as well as a temporary
// one; a directory that comes from none of them gets no variable.
func relocateHint(dir string) string {
	home := os.Getenv("HOME")
	bases := []struct{ env, base string }{
		{"TMPDIR", os.TempDir()},
		{"XDG_STATE_HOME", xdgBase("XDG_STATE_HOME", home, ".local", "state")},
		{"XDG_DATA_HOME", xdgBase("XDG_DATA_HOME", home, ".local", "share")},
		{"XDG_CONFIG_HOME", xdgBase("XDG_CONFIG_HOME", home, ".config")},
		{"XDG_CACHE_HOME", xdgBase("XDG_CACHE_HOME", home, ".cache")},
		{"XDG_RUNTIME_DIR", os.Getenv("XDG_RUNTIME_DIR")},
		{"HOME", home},
	}
	dir = filepath.Clean(dir)
	best, bestLen := "", -1
	for _, b := range bases {
		if b.base == "" || !filepath.IsAbs(b.base) {
			continue
		}
		base := filepath.Clean(b.base)
		if (dir == base || strings.HasPrefix(dir, base+string(filepath.Separator)) || base == "/") && len(base) > bestLen {
			best, bestLen = b.env, len(base)
		}
	}
	if best == "" {
		return "remove it, or use a directory you own"
	}
	return "remove it, or set " + best + " to a directory you own"
}

// xdgBase is an XDG base directory: its variable when set to an absolute
// path (the specification ignores a relative one), else its default under
// home.
func xdgBase(env, home string, def ...string) string {
	if v := os.Getenv(env); filepath.IsAbs(v) {
		return v
	}
	if home == "" {
		return ""
	}
	return filepath.Join(append([]string{home}, def...)...)
}
