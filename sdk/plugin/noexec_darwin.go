package plugin

import "golang.org/x/sys/unix"

// noexec says whether dir's file system forbids executing binaries.
func noexec(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false // MkdirTemp reports what is wrong with it
	}
	return st.Flags&unix.MNT_NOEXEC != 0
}
