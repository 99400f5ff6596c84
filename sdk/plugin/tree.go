package plugin

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// pluginTree is what the host owns of one plugin process: everything the
// plugin starts — its runtime CLI, the CLI's tools, even those in a session
// of their own — carries token in agentproc.TreeEnv and, when the host may
// create cgroups, lives in cgroup. Once the plugin is gone, kill ends all of
// it: a SIGKILLed plugin cannot stop its runtime's tools itself, and its CLI
// dies by Pdeathsig without stopping them either.
type pluginTree struct {
	token  string
	cgroup *agentproc.Cgroup // nil: the token alone
	log    hclog.Logger
}

func newPluginTree(log hclog.Logger) *pluginTree {
	t := &pluginTree{token: agentproc.NewTreeToken(), log: log}
	cg, err := agentproc.NewCgroup("avenor-plugin")
	if err != nil {
		log.Debug("plugin without a cgroup of its own; its tree is owned through "+agentproc.TreeEnv, "reason", err)
		return t
	}
	t.cgroup = cg
	return t
}

// dropCgroup gives the cgroup up: the plugin could not be started into it.
func (t *pluginTree) dropCgroup() {
	if t.cgroup != nil {
		_ = t.cgroup.Remove(0)
		t.cgroup = nil
	}
}

// kill ends every process of the tree; called once the plugin is reaped.
func (t *pluginTree) kill() {
	n := 0
	if cg := t.cgroup; cg != nil {
		killed, err := cg.Kill()
		if err != nil {
			t.log.Warn("killing what the plugin left behind", "error", err)
		}
		n += len(killed)
	}
	n += agentproc.KillMarked(t.token)
	if n > 0 {
		t.log.Debug("killed what the plugin left behind", "processes", n)
	}
	if cg := t.cgroup; cg != nil {
		if err := cg.Remove(pluginCgroupRemoveWait); err != nil {
			t.log.Warn("removing the plugin's cgroup", "error", err)
		}
	}
}

// pluginCgroupRemoveWait bounds the wait for a dead plugin's cgroup to
// empty after its tree was killed.
const pluginCgroupRemoveWait = 2 * time.Second
