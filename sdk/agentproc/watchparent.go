package agentproc

import (
	"context"
	"os"
	"time"
)

// WatchParent calls onDeath once when the process that started the caller
// dies, and returns when ctx is done.
//
// A plugin whose host crashed is reparented (to init or a subreaper) and
// would otherwise live on, holding its agent CLI. Linux offers Pdeathsig for
// this, but it fires when the parent *thread* exits and must be set by the
// parent before exec, so a plugin cannot rely on the host having done it.
// Polling getppid is portable across hosts and cheap.
//
// The parent is the one at call time: call WatchParent early, because a
// parent that died before the call goes unnoticed. interval <= 0 means
// DefaultParentPollInterval.
func WatchParent(ctx context.Context, interval time.Duration, onDeath func()) {
	watchParent(ctx, interval, os.Getppid(), onDeath)
}

// ParentGone is WatchParent as a channel: closed when the process that
// started the caller dies (the parent is the one at call time), its watch
// ending with ctx.
func ParentGone(ctx context.Context, interval time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	ppid := os.Getppid()
	go watchParent(ctx, interval, ppid, func() { close(ch) })
	return ch
}

// watchParent takes the original parent's pid so that tests can capture it
// before signalling that the watch may begin.
func watchParent(ctx context.Context, interval time.Duration, ppid int, onDeath func()) {
	if interval <= 0 {
		interval = DefaultParentPollInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if os.Getppid() != ppid {
				onDeath()
				<-ctx.Done()
				return
			}
		}
	}
}
