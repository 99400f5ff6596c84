package agentproc

// The reaper is what cleans up a runtime CLI's tree when nobody else is left
// to: the plugin and the host killed together (a SIGKILL of the host's
// whole process group, which holds an `avenor run`'s plugin; a kill -9 of
// both). The CLI itself then dies by Pdeathsig, but a tool it started in a
// session of its own lives on, and where no cgroup holds the tree nothing
// else would end it.
//
// Start makes the reaper the leader of the CLI's process group and starts
// the CLI into that group, beside it: the CLI stays the plugin's child (its
// pipes, exit status and Pdeathsig are unchanged), and the reaper, started
// without Pdeathsig, outlives the plugin. It is this very binary run again
// (/proc/self/exe, which works even after the file was replaced by an
// upgrade) with ReaperEnv set: the package's init sees it and runs the
// reaper instead of the program, so no other binary has to ship. The reaper
// waits for the plugin, its parent, to die (a pidfd, else polling getppid)
// and then kills the CLI's cgroup, every process carrying the CLI's token in
// TreeEnv and every process of its group, and exits. While the plugin lives
// it only waits: the plugin kills it with the group once the CLI is gone.

// Environment of a reaper. ReaperEnv is the pid of the plugin it watches;
// the others are what it kills when that plugin dies.
const (
	// ReaperEnv, set to the parent's pid, makes this package's init run
	// the reaper instead of the program.
	ReaperEnv = "AVENOR_AGENTPROC_REAPER"
	// reaperTokenEnv is the CLI's token in TreeEnv.
	reaperTokenEnv = "AVENOR_AGENTPROC_REAPER_TREE"
	// reaperCgroupEnv is the CLI's cgroup directory, when it has one.
	reaperCgroupEnv = "AVENOR_AGENTPROC_REAPER_CGROUP"
	// reaperTempEnv is the sandbox's private temp dir, when it has one.
	reaperTempEnv = "AVENOR_AGENTPROC_REAPER_TMP"
)
