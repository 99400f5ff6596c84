package runner

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// HeldSession is a plugin process and its open session that a run kept when
// it ended (Options.KeepSession), so that a later run continues the session
// in the same process (Options.Held): the only way to continue a session
// whose backend's resume scope is in_process, and the cheapest way for the
// others. Between runs its events are dropped and its permission requests
// refused. Whoever holds it must pass it to a run or Close it.
type HeldSession struct {
	l    *plugins.Launched
	sess sdk.Session
	h    *sessionHost
	id   string

	once sync.Once
}

// SessionID is the session's id.
func (s *HeldSession) SessionID() string { return s.id }

// Plugin is the plugin process holding the session.
func (s *HeldSession) Plugin() *plugins.Launched { return s.l }

// Exited is closed when the plugin process has exited.
func (s *HeldSession) Exited() <-chan struct{} { return s.l.Client.Exited() }

// Alive reports whether the plugin process still runs.
func (s *HeldSession) Alive() bool { return pluginAlive(s.l) }

// Close closes the session (when the plugin still runs), stops the plugin
// and kills the runtime's process group. It is idempotent.
func (s *HeldSession) Close() {
	s.once.Do(func() {
		if s.Alive() {
			ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
			if err := s.sess.Close(ctx); err != nil {
				s.h.logger.Warn("closing a kept session failed", "session_id", s.id, "error", err)
			}
			cancel()
		}
		s.l.Client.Kill()
		if p := s.h.process().PGID; p > 1 {
			_ = agentproc.KillGroup(p)
		}
		s.h.stopNetProxy()
	})
}

func pluginAlive(l *plugins.Launched) bool {
	select {
	case <-l.Client.Exited():
		return false
	default:
		return true
	}
}

// ReattachHeld takes a parked session over from a plugin that outlived the
// supervisor before this one (Options.Reattach): the session is held as if
// a run had kept it, its events dropped until a run continues it.
func ReattachHeld(ctx context.Context, l *plugins.Launched, reattach func(context.Context, *plugins.Launched, sdk.Host) (sdk.Session, plugin.Reattached, error), logger hclog.Logger) (*HeldSession, plugin.Reattached, error) {
	h := newSessionHost(nil, logger, nil)
	h.park()
	sess, ra, err := reattach(ctx, l, h)
	if err != nil {
		return nil, ra, err
	}
	return &HeldSession{l: l, sess: sess, h: h, id: sess.ID()}, ra, nil
}
