package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// untrusted says why a response file, opened as f from path, may not be
// taken as an answer to request id; "" when it may. An answer decides what
// an agent runs, so it is taken only from someone who could have answered
// anyway: the run's own user or root. That is, the file is not a symlink
// (lst, its Lstat, is the same inode as f, so nothing was swapped between
// the two), belongs to this process's user or to root, and lies in a
// directory other users cannot write, unless it is sticky (like /tmp),
// where others may create entries but never replace ours. On any refusal
// the request stays pending and the harness can write a proper answer.
func untrusted(path string, lst *syscall.Stat_t, f *os.File, id string) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Sprintf("permission response %s could not be checked (%v); ignored, still waiting for request %s", path, err, id)
	}
	if lst.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return fmt.Sprintf("permission response %s is a symbolic link; ignored, still waiting for request %s "+
			"(another user may have planted it to answer for you: write the answer to a regular file of your own and rename it into place)", path, sdk.Truncate(id, 80))
	}
	if lst.Dev != st.Dev || lst.Ino != st.Ino {
		return fmt.Sprintf("permission response %s was replaced while it was read; ignored, still waiting for request %s", path, sdk.Truncate(id, 80))
	}
	me := os.Geteuid()
	if owner := int(st.Uid); owner != me && owner != 0 {
		return fmt.Sprintf("permission response %s belongs to uid %d, not to this run's user (uid %d) or root; ignored, still waiting for request %s "+
			"(another user may have written it to answer for you: write the answer as uid %d)", path, owner, me, sdk.Truncate(id, 80), me)
	}
	dir := filepath.Dir(path)
	var dst syscall.Stat_t
	if err := syscall.Stat(dir, &dst); err != nil {
		return fmt.Sprintf("permission response %s: its directory could not be checked (%v); ignored, still waiting for request %s", path, err, sdk.Truncate(id, 80))
	}
	shared := dst.Mode&0o002 != 0 || (dst.Mode&0o020 != 0 && dst.Gid != uint32(os.Getegid()))
	if shared && dst.Mode&syscall.S_ISVTX == 0 {
		return fmt.Sprintf("permission response %s is in %s, a directory other users can write and that is not sticky, so any of them may have put it there; "+
			"ignored, still waiting for request %s (use a permission base in a directory only you can write)", path, dir, sdk.Truncate(id, 80))
	}
	return ""
}
