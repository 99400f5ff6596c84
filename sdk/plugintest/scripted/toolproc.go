package scripted

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// toolproc modes: what the process of each tool call does.
const (
	// ModeIdle: `sleep` — a tool that waits on nothing forever.
	ModeIdle = "idle"
	// ModeGrandchild: `sh -c "sleep …; :"` — a shell that waits on a
	// stuck grandchild.
	ModeGrandchild = "grandchild"
	// ModeBusyCPU: a process that burns some CPU every 100 ms.
	ModeBusyCPU = "busy-cpu"
	// ModeBusyIO: a process that writes 4 KiB to /dev/null every 100 ms
	// and uses next to no CPU.
	ModeBusyIO = "busy-io"
	// ModeBusy: busy-cpu and busy-io by turns (the first tool call's
	// process burns CPU, the second writes, …).
	ModeBusy = "busy"
	// ModeNone: no process at all (an edit, an MCP call inside the
	// runtime); the tool call just lasts.
	ModeNone = "none"
)

// busyEnv makes this package's binary (the plugin, or a test binary
// that links it) act as a busy toolproc process instead of serving:
// "<mode> <seconds>".
const busyEnv = "SCRIPTED_TOOLPROC_BUSY"

func init() {
	spec := os.Getenv(busyEnv)
	if spec == "" {
		return
	}
	var mode string
	var secs float64
	if _, err := fmt.Sscan(spec, &mode, &secs); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", busyEnv, spec, err)
		os.Exit(2)
	}
	runBusy(mode, time.Duration(secs*float64(time.Second)))
	os.Exit(0)
}

// runBusy is the body of a busy toolproc process.
func runBusy(mode string, life time.Duration) {
	end := time.Now().Add(life)
	var sink *os.File
	if mode == ModeBusyIO {
		var err error
		if sink, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
			os.Exit(3)
		}
		defer sink.Close()
	}
	buf := make([]byte, 4096)
	x := 0
	for time.Now().Before(end) {
		switch mode {
		case ModeBusyCPU:
			spin := time.Now().Add(5 * time.Millisecond)
			for time.Now().Before(spin) {
				for i := range 10000 {
					x += i ^ x
				}
			}
		case ModeBusyIO:
			_, _ = sink.Write(buf)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = x
}

// toolproc runs the toolproc step: n tool calls at once, each with a
// process of its own doing what the mode says for the step's duration.
func (r *run) toolproc(st Step) (runtime.TurnResult, error) {
	s := r.s
	n := max(st.N, 1)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = s.nextID("call")
		s.host.Emit(runtime.NewEvent(runtime.EventToolCall, map[string]any{
			"session_id": s.id, "session_update": "tool_call", "toolCallId": ids[i],
			"title": fmt.Sprintf("%s %d", st.Text, i+1), "kind": "execute", "status": "in_progress",
			"rawInput": map[string]any{"mode": st.Text},
		}))
	}
	var wg sync.WaitGroup
	failed := make([]bool, n)
	var cmds []*exec.Cmd
	if st.Text != ModeNone {
		for i := range ids {
			mode := st.Text
			if mode == ModeBusy {
				mode = []string{ModeBusyCPU, ModeBusyIO}[i%2]
			}
			cmd, err := toolCmd(mode, st.Duration)
			if err != nil {
				return r.result(runtime.StopError), runtime.Errorf(runtime.FaultPlugin, "line %d: toolproc: %v", st.Line, err)
			}
			cmd.Dir = s.dir
			cmd.SysProcAttr = childSysProcAttr()
			if err := cmd.Start(); err != nil {
				for _, c := range cmds {
					_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				}
				return r.result(runtime.StopError), runtime.Errorf(runtime.FaultRuntime, "line %d: toolproc: %v", st.Line, err)
			}
			cmds = append(cmds, cmd)
			wg.Add(1)
			go func() {
				defer wg.Done()
				failed[i] = cmd.Wait() != nil
			}()
		}
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	var timer <-chan time.Time
	if st.Text == ModeNone {
		t := time.NewTimer(st.Duration)
		defer t.Stop()
		timer = t.C
	}
	cancelled := false
	select {
	case <-all:
		if timer != nil {
			select {
			case <-timer:
			case <-r.ctx.Done():
				cancelled = true
			}
		}
	case <-r.ctx.Done():
		cancelled = true
	}
	if cancelled {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		<-all
		return r.result(runtime.StopCancelled), nil
	}
	for i, id := range ids {
		status := "completed"
		if failed[i] {
			status = "failed"
		}
		s.host.Emit(runtime.NewEvent(runtime.EventToolCallUpdate, map[string]any{
			"session_id": s.id, "session_update": "tool_call_update", "toolCallId": id, "kind": "execute", "status": status,
		}))
	}
	return runtime.TurnResult{}, nil
}

// toolCmd is the process of one toolproc tool call.
func toolCmd(mode string, life time.Duration) (*exec.Cmd, error) {
	secs := strconv.FormatFloat(life.Seconds(), 'f', -1, 64)
	switch mode {
	case ModeIdle:
		return exec.Command("sleep", secs), nil
	case ModeGrandchild:
		return exec.Command("/bin/sh", "-c", "sleep "+secs+"; :"), nil
	case ModeBusyCPU, ModeBusyIO:
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), busyEnv+"="+mode+" "+secs)
		return cmd, nil
	}
	return nil, fmt.Errorf("unknown mode %q", mode)
}
