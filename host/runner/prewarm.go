package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/avenor-go/avenor/sdk/agentproc"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ErrNoPrewarm: the backend does not advertise the prewarm capability, so
// a session it opens before its first prompt is not known to be usable for
// that prompt (its runtime may bind the session to the first prompt, or
// time an unused session out).
var ErrNoPrewarm = errors.New("the backend cannot pre-warm a session (capability prewarm)")

// Prewarm launches a plugin and opens a fresh session with o's backend,
// dir, model, agent, thinking, env and plugin options, and sends no prompt:
// the cold start a user otherwise waits for on the first prompt (the CLI
// starting and initialising, the session opening) is paid ahead of time.
// The session is held as a kept one is between runs (events dropped,
// permission requests refused) until a run takes it as Options.Held, whose
// session.start then names it; or until Close. o.Launch is required; the
// other run fields (prompt, writer, sentinel) are not used.
func Prewarm(ctx context.Context, o Options) (*HeldSession, error) {
	o.defaults()
	if o.Launch == nil {
		return nil, errors.New("runner: Prewarm needs Options.Launch")
	}
	l, err := o.Launch(ctx)
	if err != nil {
		return nil, err
	}
	info := l.Backend.Info()
	fail := func(h *sessionHost, err error) (*HeldSession, error) {
		l.Client.Kill()
		if h != nil {
			if p := h.process().PGID; p > 1 {
				_ = agentproc.KillGroup(p)
			}
			h.stopNetProxy()
		}
		return nil, err
	}
	if info.Capability(sdk.CapPrewarm) != sdk.Supported {
		return fail(nil, fmt.Errorf("backend %s: %w", o.Backend, ErrNoPrewarm))
	}
	if err := checkOpen(info, o); err != nil {
		return fail(nil, err)
	}
	h := newSessionHost(nil, o.Logger, nil)
	h.setQuestions(o.Questions)
	sb, err := h.startNetProxy(o.Sandbox)
	if err != nil {
		return fail(h, err)
	}
	sess, err := l.Backend.Open(ctx, sdk.OpenRequest{
		Backend: o.Backend, Dir: o.Dir, Model: o.Model, Agent: o.Agent, Thinking: o.Thinking,
		ServerURL: o.ServerURL, Env: o.Env, Options: o.PluginOptions,
		StateDir: o.StateDir, RunID: o.RunID, DirExplicit: o.DirExplicit,
		PermissionMode: o.PermissionMode, Launch: o.LaunchContext, Sandbox: sb, Questions: o.Questions,
	}, h)
	if err != nil {
		return fail(h, fmt.Errorf("backend %s: open session: %w", o.Backend, err))
	}
	if p := sess.Process(); p.PGID > 1 {
		h.RecordProcess(p)
	}
	if err := h.setModelEndpoints(o.Backend, sb, sess); err != nil {
		return fail(h, err)
	}
	return &HeldSession{l: l, sess: sess, h: h, id: sess.ID()}, nil
}
