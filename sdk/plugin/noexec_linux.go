package plugin

import "syscall"

// noexec says whether dir's file system forbids executing binaries.
func noexec(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false // MkdirTemp reports what is wrong with it
	}
	// statfs's ST_NOEXEC has the value of the mount flag MS_NOEXEC.
	return st.Flags&syscall.MS_NOEXEC != 0
}
