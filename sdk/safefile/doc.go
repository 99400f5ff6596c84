// Package safefile creates avenor's files so that another local user cannot
// hijack them: not by planting a symbolic link where avenor is about to
// write (root would then overwrite a file of root's), not by pre-creating a
// file or directory at a predictable name (avenor would then write secrets
// into something the other user can read), not by swapping entries of a
// directory that others may write.
//
// The rules it enforces:
//
//   - a directory avenor writes into by name must be ours or root's, and not
//     writable by other users unless it is sticky (CheckDir); a shared
//     directory that fails this is refused with an error naming it and the
//     fix;
//   - a directory avenor owns (its state, its artifacts) is created 0700, and
//     an existing one must be ours, not a symlink, and not writable by others
//     (PrivateDir);
//   - files are created O_CREAT|O_EXCL|O_NOFOLLOW (Create), and a file that
//     must appear whole is written to a temporary file of random name in the
//     same directory and renamed over the target (WriteFile), which replaces
//     a planted symlink instead of following it;
//   - lock files are opened O_NOFOLLOW and must be ours (OpenLock);
//   - what a killed avenor leaves behind under a <prefix><pid>- name is
//     removed by the next one, only when it is ours and the pid is dead
//     (RemoveStale).
//
// It lives in sdk, not in the host module, because plugins write files too
// (the OpenCode per-run config, the pi gate extension) and cannot import the
// host. It is Unix only, as avenor is.
package safefile
