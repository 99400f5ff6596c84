package scripted

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// child is a stand-in runtime process: `sleep`, in a process group of its
// own, like a real agent CLI a plugin starts.
type child struct {
	pid  int
	done chan struct{} // closed once the process is reaped
}

// startChild starts a child that lives for life, makes it the session's
// runtime process and tells the host, so the host can kill its group if the
// plugin dies.
func (s *session) startChild(life time.Duration) error {
	cmd := exec.Command("sleep", strconv.FormatFloat(life.Seconds(), 'f', -1, 64))
	cmd.SysProcAttr = childSysProcAttr()
	if err := cmd.Start(); err != nil {
		return runtime.Errorf(runtime.FaultRuntime, "child: %v", err)
	}
	c := &child{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { // reaps the child; Close waits for it
		_ = cmd.Wait()
		close(c.done)
	}()
	p := runtime.ProcessInfo{PID: c.pid, PGID: c.pid, Binary: cmd.Path}

	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.children = append(s.children, c)
		s.proc = p
	}
	s.mu.Unlock()
	if closed { // Close ran while we were starting it
		return c.kill(context.Background())
	}
	if rec, ok := s.host.(runtime.ProcessRecorder); ok {
		rec.RecordProcess(p)
	}
	if s.pidFile != "" {
		if err := safefile.WriteFile(s.pidFile, []byte(strconv.Itoa(c.pid)+"\n"), 0o600); err != nil {
			return runtime.Errorf(runtime.FaultUser, "child: writing %s: %v", PIDFileEnv, err)
		}
	}
	return nil
}

// kill kills the child's process group and waits until it is reaped.
func (c *child) kill(ctx context.Context) error {
	c.signal()
	return c.wait(ctx)
}

// signal kills the child's whole process group, unless the child is gone
// already (its pid may then belong to someone else).
func (c *child) signal() {
	select {
	case <-c.done:
	default:
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
	}
}

// wait waits until the child is reaped.
func (c *child) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("child %d did not exit: %w", c.pid, ctx.Err())
	}
}
