package agentproc

import (
	"errors"
	"fmt"
)

var (
	// ErrNoPath: Spec.Path is empty. The fault is the caller's.
	ErrNoPath = errors.New("agentproc: Spec.Path is empty; set it to the runtime CLI's name or absolute path")
	// ErrLineTooLong matches every *LineTooLongError with errors.Is.
	ErrLineTooLong = errors.New("agentproc: line too long")
	// ErrTerminated: Stop had to send SIGTERM; the CLI then exited.
	ErrTerminated = errors.New("agentproc: process had to be terminated")
	// ErrKilled: Stop had to send SIGKILL.
	ErrKilled = errors.New("agentproc: process had to be killed")
	// ErrNoCgroup: NewCgroup cannot create a cgroup here; the process tree is
	// then owned through its process group, the subreaper and TreeEnv.
	ErrNoCgroup = errors.New("agentproc: no usable cgroup v2")
)

// LineTooLongError reports a line longer than the reader's limit. The line
// was read and discarded; the next line is unaffected.
type LineTooLongError struct {
	Limit int64 // the bound in bytes
	Size  int64 // the discarded line's length, terminator excluded
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("agentproc: line of %d bytes exceeds the %d-byte limit and was discarded", e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrLineTooLong) work.
func (e *LineTooLongError) Is(target error) bool { return target == ErrLineTooLong }
