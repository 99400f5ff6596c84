package agentproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	if v, ok := os.LookupEnv(LandlockEnv); ok {
		err := landlockMain(v)
		fmt.Fprintf(os.Stderr, "%s%v\n", LandlockLaunchFailed, err)
		os.Exit(LandlockLauncherExit)
	}
}

// LandlockABI is the Landlock ABI version this kernel enforces; 0 is
// none (no Landlock, or disabled at boot).
func LandlockABI() int {
	v, err := landlockABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	return v
}

// landlockHandled are the filesystem rights ABI abi handles, all of them:
// the strictest ruleset the kernel knows.
func landlockHandled(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	}
	return 1<<13 - 1
}

// Rights a rule on a file may carry, and the read rights.
const (
	landlockFileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	landlockReadRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	landlockDevRights  = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV | unix.LANDLOCK_ACCESS_FS_READ_DIR
)

// landlockMain is the launcher: it returns only on failure.
func landlockMain(v string) error {
	var spec landlockSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil || spec.Path == "" {
		return fmt.Errorf("%s is not a launcher spec (%v); unset it", LandlockEnv, err)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, LandlockEnv+"=") {
			env = append(env, kv)
		}
	}
	plan, err := planLandlock(spec, os.ReadDir)
	if err != nil {
		return err
	}
	abi := LandlockABI()
	if abi < 1 {
		return errors.New("this kernel does not enforce Landlock; " + LandlockInstallHint)
	}
	fd, err := landlockRuleset(plan, abi)
	if err != nil {
		return err
	}
	// The ruleset binds the thread that applies it and what it execs:
	// both must be this one.
	runtime.LockOSThread()
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := landlockRestrictSelf(fd); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	_ = unix.Close(fd)
	return syscall.Exec(spec.Path, os.Args, env)
}

// dropCapabilities leaves the runtime no capability, root included:
// Landlock governs files, not what a capability allows (loading a kernel
// module, raw devices, another process's memory). It empties the bounding
// set, so that the exec grants none, then the inheritable and ambient
// sets; a process that has no capability has nothing to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			if data[0].Permitted|data[1].Permitted == 0 {
				break // nothing held, nothing the exec could grant without privileges
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("clearing inheritable capabilities: %w", err)
	}
	return nil
}

// landlockRuleset builds plan's ruleset under ABI abi: every filesystem
// right the ABI has is handled, and from ABI 6 signals to and abstract
// unix sockets of processes outside the boundary are refused.
func landlockRuleset(plan landlockPlan, abi int) (int, error) {
	handled := landlockHandled(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	if len(plan.ConnectPorts) > 0 {
		if abi < LandlockNetABI {
			return -1, fmt.Errorf("a TCP port allow-list needs Landlock ABI %d, this kernel has %d", LandlockNetABI, abi)
		}
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	fd, err := landlockCreateRuleset(&attr)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset (ABI %d): %w", abi, err)
	}
	// Device nodes are made by no one: a block device in the workspace
	// would be the whole disk.
	writable := handled &^ (unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK)
	add := func(paths []string, rights uint64, missingOK bool) error {
		for _, p := range paths {
			if err := landlockAllow(fd, p, rights&handled); err != nil {
				if missingOK && errors.Is(err, unix.ENOENT) {
					continue
				}
				return err
			}
		}
		return nil
	}
	for _, step := range []struct {
		paths     []string
		rights    uint64
		missingOK bool
	}{
		{plan.Writable, writable, false},
		{plan.ReadDirs, landlockReadRights, true},
		{plan.ReadFiles, landlockReadRights, true},
		{plan.Devices, landlockDevRights, true},
		{plan.ListDirs, unix.LANDLOCK_ACCESS_FS_READ_DIR, false},
	} {
		if err := add(step.paths, step.rights, step.missingOK); err != nil {
			_ = unix.Close(fd)
			return -1, err
		}
	}
	for _, port := range plan.ConnectPorts {
		attr := landlockNetPortAttr{AllowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, Port: uint64(port)}
		if err := landlockAddNetPort(fd, &attr); err != nil {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("landlock_add_rule port %d: %w", port, err)
		}
	}
	return fd, nil
}

// landlockAllow adds a rule granting rights beneath p. p is opened
// without following a final symlink, so an entry swapped for a link
// since it was listed grants nothing beyond the link itself; a rule on a
// file keeps only the rights a file can carry.
func landlockAllow(fd int, p string, rights uint64) error {
	pfd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("opening %s for its Landlock rule: %w", p, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		return nil
	default:
		rights &= landlockFileRights
	}
	if rights == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Parent_fd: int32(pfd), Allowed_access: rights}
	if err := landlockAddPathBeneath(fd, &attr); err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", p, err)
	}
	return nil
}

// processAlive reports whether pid exists (a zombie counts).
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// ownedByMe reports whether p is a directory (not a link) of this user.
func ownedByMe(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
