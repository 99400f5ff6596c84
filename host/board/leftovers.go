package board

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Leftovers of ended supervisors in the scanned directories: beside
// <name>.sock a supervisor leaves <name>.sock.control.lock (the bind lock),
// <name>.sock.dead (its tombstone) and, when `avenor mcp` started it,
// <name>.sock.start.lock. Without cleaning they pile up, one set per
// supervisor that ever ran.
const (
	// LeftoverAge: a leftover is removed only once it is this old, so a
	// harness still reads a fresh tombstone and a supervisor starting now
	// keeps the lock file it just created.
	LeftoverAge = 10 * time.Minute
	// leftoverEvery bounds how often the board looks (on /api/sockets).
	leftoverEvery = 30 * time.Second
)

var leftoverSuffixes = []string{".control.lock", ".start.lock", ".dead"}

// cleanLeftovers removes, at most every leftoverEvery, the leftovers of
// ended supervisors in the scan directories: only this user's regular
// files older than LeftoverAge whose socket is gone or stale (nothing
// listens), and a lock file only while the board holds its lock, so no
// starting supervisor is holding it.
func (s *Server) cleanLeftovers() {
	s.leftoverMu.Lock()
	if time.Since(s.leftoverAt) < leftoverEvery {
		s.leftoverMu.Unlock()
		return
	}
	s.leftoverAt = time.Now()
	s.leftoverMu.Unlock()
	for _, dir := range s.scan {
		for _, p := range removeLeftovers(dir, time.Now().Add(-LeftoverAge)) {
			s.log.Debug("removed an ended supervisor's leftover", "path", p)
		}
	}
}

// removeLeftovers does the work of cleanLeftovers for one directory and
// returns the paths it removed.
func removeLeftovers(dir string, before time.Time) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	sockets := map[string]bool{}
	for _, e := range entries {
		for _, suf := range leftoverSuffixes {
			if sock, ok := strings.CutSuffix(e.Name(), suf); ok && strings.HasSuffix(sock, ".sock") {
				sockets[filepath.Join(dir, sock)] = true
			}
		}
	}
	var removed []string
	for sock := range sockets {
		removed = append(removed, removeEnded(sock, before)...)
	}
	return removed
}

// removeEnded removes sock's leftovers when sock's supervisor has ended.
// The socket's bind lock is held throughout (when there is one), as the
// control server holds it to bind or to remove a stale socket.
func removeEnded(sock string, before time.Time) []string {
	lock := sock + ".control.lock"
	if f, ok := ownOld(lock, before); ok {
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			return nil // a supervisor is binding or cleaning up right now
		}
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	if !ended(sock) {
		return nil
	}
	var removed []string
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 && os.Remove(sock) == nil {
		removed = append(removed, sock)
	}
	for _, suf := range []string{".dead", ".start.lock", ".control.lock"} {
		p := sock + suf
		f, ok := ownOld(p, before)
		if !ok {
			continue
		}
		if suf == ".start.lock" && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // an `avenor mcp` is starting a supervisor here
			continue
		}
		if os.Remove(p) == nil {
			removed = append(removed, p)
		}
		f.Close()
	}
	return removed
}

// ownOld opens path when it is a regular file of this user (not a
// symlink) last changed before before.
func ownOld(path string, before time.Time) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	var st syscall.Stat_t
	fi, err := f.Stat()
	if err != nil || syscall.Fstat(int(f.Fd()), &st) != nil || !fi.Mode().IsRegular() ||
		int(st.Uid) != os.Geteuid() || fi.ModTime().After(before) {
		f.Close()
		return nil, false
	}
	return f, true
}

// ended says whether nothing serves sock: it is missing, or dialling it is
// refused (the only proof of a stale socket, as the control server uses).
func ended(sock string) bool {
	fi, err := os.Lstat(sock)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.DialTimeout("unix", sock, 250*time.Millisecond)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
