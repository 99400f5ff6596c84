package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/host/plugins"
	hostrun "github.com/avenor-go/avenor/host/run"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the readiness check avenor_spawn makes before it spawns.
const (
	// ReadyCheckTimeout bounds starting the backend's plugin and its Check
	// (the runtime CLI's version and login).
	ReadyCheckTimeout = 30 * time.Second
	// ReadyCacheTTL is how long a backend found ready is not checked again
	// for spawns in the same directory; one found not ready is checked at
	// every spawn (the user may have installed or logged in meanwhile).
	ReadyCacheTTL = time.Minute
)

// Readiness is what avenor_spawn learns of a backend before it spawns.
type Readiness struct {
	// Backend is the backend the spawn would run: the one it names, else
	// the configured default for its directory.
	Backend string
	// Ready: the runtime is usable here (its plugin's Check).
	Ready bool
	// Message is Check's word on what is wrong and how to fix it (the
	// install or login hint).
	Message string
	// Unknown: no installed plugin serves Backend; Installed then lists
	// the backends that are installed.
	Unknown   bool
	Installed []string
	// Err is a failure to resolve the config or start the plugin.
	Err error
}

// readinessError is the tool error of a spawn whose backend cannot run
// here, nil when it can.
func readinessError(r Readiness) error {
	switch {
	case r.Unknown:
		installed := "none (install a backend plugin: `avenor plugin install`)"
		if len(r.Installed) > 0 {
			installed = strings.Join(r.Installed, ", ")
		}
		return fmt.Errorf("unknown backend %q: no installed plugin serves it; installed backends: %s", r.Backend, installed)
	case r.Err != nil:
		return fmt.Errorf("backend %s cannot be started here: %v", r.Backend, r.Err)
	case !r.Ready:
		msg := strings.TrimPrefix(r.Message, r.Backend+": ") // a plugin's message may name its backend too
		if msg == "" {
			msg = "its readiness check failed"
		}
		return fmt.Errorf("backend %s is not usable here: %s (fix that, then spawn again; avenor_list_backends shows which backends are ready)", r.Backend, msg)
	}
	return nil
}

// readyCache remembers backends found ready, by spawn directory and the
// backend the spawn named.
type readyCache struct {
	mu sync.Mutex
	at map[[2]string]time.Time
}

func (c *readyCache) fresh(dir, backend string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[[2]string{dir, backend}]
	return ok && now.Sub(t) < ReadyCacheTTL
}

func (c *readyCache) put(dir, backend string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[[2]string]time.Time{}
	}
	for k, t := range c.at { // the cache holds only fresh entries
		if now.Sub(t) >= ReadyCacheTTL {
			delete(c.at, k)
		}
	}
	c.at[[2]string{dir, backend}] = now
}

// checkReady runs the readiness check of a spawn in dir naming backend
// ("" = the configured default), unless it passed a moment ago.
func (s *Server) checkReady(ctx context.Context, dir, backend string) error {
	now := time.Now()
	if s.ready.fresh(dir, backend, now) {
		return nil
	}
	check := s.o.CheckBackend
	if check == nil {
		check = s.checkBackend
	}
	ctx, cancel := context.WithTimeout(ctx, ReadyCheckTimeout)
	defer cancel()
	r := check(ctx, dir, backend)
	if err := readinessError(r); err != nil {
		return err
	}
	s.ready.put(dir, backend, now)
	return nil
}

// checkBackend resolves the spawn's backend as the supervisor will (the
// config layers of dir, the project's plugin pins), starts its plugin and
// asks its Check, in this server's environment, which is an autostarted
// supervisor's too.
func (s *Server) checkBackend(ctx context.Context, dir, backend string) Readiness {
	environ := s.o.Env
	if environ == nil {
		environ = os.Environ()
	}
	getenv := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	var set map[string]any
	if backend != "" {
		set = map[string]any{"backend": backend}
	}
	res, err := hostrun.Resolve(hostrun.Env{Getenv: getenv, Environ: environ}, dir, set)
	if err != nil {
		return Readiness{Backend: backend, Err: err}
	}
	r := Readiness{Backend: res.Settings.Backend}
	b, err := res.Backend(r.Backend)
	var nf *plugins.NotFoundError
	if err != nil && !errors.As(err, &nf) {
		r.Err = err // e.g. a pinned plugin whose pin does not match
		return r
	}
	if err != nil {
		r.Unknown = true
		for _, row := range hostrun.ListBackends(ctx, res.Finder) {
			if row.Backend != "" {
				r.Installed = append(r.Installed, row.Backend)
			}
		}
		sort.Strings(r.Installed)
		return r
	}
	l, err := b.Launch(ctx)
	if err != nil {
		r.Err = err
		return r
	}
	defer l.Client.Kill()
	rd := l.Backend.Check(ctx, sdk.CheckRequest{Backend: r.Backend, Env: b.Env, Options: b.PluginOptions})
	if ctx.Err() != nil && !rd.Ready {
		r.Err = errors.New("its readiness check did not answer in time")
		return r
	}
	r.Ready, r.Message = rd.Ready, rd.Message
	return r
}
