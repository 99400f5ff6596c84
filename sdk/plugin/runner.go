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
)

// procRunner starts the plugin process for go-plugin and records how it
// ended, which go-plugin's own runner keeps to itself: the host needs it to
// tell the user that a plugin was killed by a signal or exited with a code.
type procRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	client         *Client
	once           sync.Once
	err            error
}

var _ runner.Runner = (*procRunner)(nil)

func newProcRunner(cmd *exec.Cmd, c *Client) (*procRunner, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &procRunner{cmd: cmd, stdout: stdout, stderr: stderr, client: c}, nil
}

func (r *procRunner) Start(context.Context) error {
	if err := r.cmd.Start(); err != nil {
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
func (r *procRunner) Name() string          { return r.cmd.Path }

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
