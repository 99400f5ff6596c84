package plugin

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

// procRunner starts the plugin process for go-plugin and records how it
// ended, which go-plugin's own runner keeps to itself: the host needs it to
// tell the user that a plugin was killed by a signal or exited with a code.
//
// It also owns the plugin's process tree (tree.go): everything the plugin
// started is killed once the plugin is gone, even when the plugin was
// SIGKILLed and could not stop its runtime's tools itself.
type procRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	client         *Client
	tree           *pluginTree
	once           sync.Once
	err            error
	// name is the plugin's path when cmd runs a verified copy of it;
	// started, when set, runs once the process has started (the copy can
	// go: the process keeps its file).
	name    string
	started func()
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(cmd *exec.Cmd, c *Client, tree *pluginTree) (*procRunner, error) {
	r := &procRunner{client: c, tree: tree}
	if err := r.setCmd(cmd, tree.cgroup); err != nil {
		return nil, err
	}
	return r, nil
}

// setCmd prepares cmd to run in the tree (cg nil: without a cgroup) with
// its output on fresh pipes.
func (r *procRunner) setCmd(cmd *exec.Cmd, cg *agentproc.Cgroup) error {
	cmd.Env = agentproc.WithTreeToken(cmd.Env, r.tree.token)
	cmd.SysProcAttr = pluginSysProcAttr(cg, cmd.Env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	r.cmd, r.stdout, r.stderr = cmd, stdout, stderr
	return nil
}

// Start starts the plugin; one that cannot be started into its cgroup
// (clone3 refused, no right to move it there) is started without one.
// go-plugin asks for Stdout and Stderr only after Start.
func (r *procRunner) Start(context.Context) error {
	err := r.cmd.Start()
	if err != nil && r.tree.cgroup != nil {
		r.tree.dropCgroup()
		retry := exec.Command(r.cmd.Path, r.cmd.Args[1:]...)
		retry.Args[0] = r.cmd.Args[0] // a verified copy keeps the plugin's own name
		retry.Env, retry.Dir = r.cmd.Env, r.cmd.Dir
		if serr := r.setCmd(retry, nil); serr != nil {
			return err
		}
		err = r.cmd.Start()
	}
	if r.started != nil {
		r.started() // started or not, the verified copy is no longer needed
	}
	if err != nil {
		return err
	}
	r.client.mu.Lock()
	r.client.pid = r.cmd.Process.Pid
	r.client.mu.Unlock()
	return nil
}

// Wait reaps the process once; go-plugin calls it after draining the pipes.
func (r *procRunner) Wait(context.Context) error {
	r.once.Do(func() {
		r.err = r.cmd.Wait()
		r.tree.kill()
		r.client.mu.Lock()
		r.client.exitErr = r.err
		r.client.mu.Unlock()
		close(r.client.exited)
	})
	return r.err
}

func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string {
	if r.name != "" {
		return r.name
	}
	return r.cmd.Path
}

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *procRunner) Diagnose(context.Context) string {
	return "the plugin binary may be built for another platform, not executable, or not an avenor plugin"
}

// The plugin runs on this machine: addresses need no translation.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
