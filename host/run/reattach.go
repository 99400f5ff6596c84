package run

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// A runtime after its supervisor's restart (Restore): the plugin that may
// still hold its session, and how a run takes that session (or the turn in
// flight in it) over.

// recoverStopWait bounds how long a lingering plugin of a runtime that
// cannot be taken over gets to stop its runtime (SIGHUP) before it is
// killed.
const recoverStopWait = 5 * time.Second

// ReattachWait bounds connecting to a lingering plugin and taking its
// session over.
const ReattachWait = 10 * time.Second

// ReattachSession connects to the plugin that kept a recovered runtime's
// session (info, of backend) and returns how a run takes session sessionID
// over from it: the events the plugin sends again that the runtime's log
// (eventLog) already ends with are not written twice. With turn, the
// adopted turn's events already logged come with it (its final output).
// The caller closes Adopt.Plugin when it does not use it.
func ReattachSession(ctx context.Context, info plugin.ReattachInfo, backend, sessionID, eventLog string, turn bool, logger hclog.Logger) (*Adopt, error) {
	l, err := plugins.Reattach(ctx, info, backend, logger)
	if err != nil {
		return nil, err
	}
	tail, err := logTailEvents(eventLog)
	if err != nil {
		logger.Warn("reading a runtime's event log", "error", err)
	}
	a := &Adopt{Plugin: l, Reattach: func(ctx context.Context, l *plugins.Launched, h sdk.Host) (sdk.Session, plugin.Reattached, error) {
		ra, ok := l.Backend.(plugin.Reattacher)
		if !ok {
			return nil, plugin.Reattached{}, fmt.Errorf("backend %s cannot hand sessions over", backend)
		}
		return ra.Reattach(ctx, sessionID, h, writtenIn(tail))
	}}
	if turn {
		a.Events = lastTurnEvents(eventLog)
	}
	return a, nil
}

// StopLingering asks a lingering plugin process to stop now (SIGHUP: it
// closes its sessions, stopping their runtimes, and exits) and kills it if
// it has not within recoverStopWait. Only a process that is an avenor
// plugin is signalled: the pid may have been reused.
func StopLingering(pid int) {
	if pid <= 1 || !IsAvenorPlugin(pid) {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGHUP)
	deadline := time.Now().Add(recoverStopWait)
	for time.Now().Before(deadline) {
		if !safefile.ProcessAlive(pid) || !IsAvenorPlugin(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// IsAvenorPlugin: pid runs with the plugin handshake's magic cookie in its
// environment (only an avenor plugin does).
func IsAvenorPlugin(pid int) bool {
	env, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
	if err != nil {
		return false
	}
	return bytes.Contains(env, []byte(plugin.MagicCookieKey+"="+plugin.MagicCookieValue))
}
