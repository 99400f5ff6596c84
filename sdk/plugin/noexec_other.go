//go:build !linux && !darwin

package plugin

// noexec cannot tell here; a directory that forbids executing the copy makes
// the launch fail with the exec error, which names the directory.
func noexec(string) bool { return false }
