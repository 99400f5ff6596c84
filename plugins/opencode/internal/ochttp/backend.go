package ochttp

import (
	"context"
	"errors"
	"fmt"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// Name is the backend's name.
const Name = "opencode-http"

// Environment and options the backend reads.
const (
	// ServerURLEnv is the default server URL (--server-url wins).
	ServerURLEnv = "AVENOR_OPENCODE_URL"
	// BinaryEnv overrides the opencode binary started when there is no
	// server URL (the "binary" option wins).
	BinaryEnv = "AVENOR_OPENCODE_BIN"
	// PasswordEnv and UsernameEnv are OpenCode's own basic-auth settings;
	// user:pass@ in the URL wins over them.
	PasswordEnv = "OPENCODE_SERVER_PASSWORD"
	UsernameEnv = "OPENCODE_SERVER_USERNAME"
	// ExplicitDirOption, when true, says the user gave --dir explicitly:
	// every call then carries ?directory=<dir> (docs/backends.md#opencode-http-plugin-opencode).
	// OpenRequest.DirExplicit is the host's own signal; the option stays
	// for hosts older than it.
	ExplicitDirOption = "explicit_dir"
	// HealthTimeoutOption is how long, in all, opening a session waits for
	// the server to answer GET /global/health: a Go duration ("90s") or a
	// number of seconds; DefaultHealthTimeout when absent.
	HealthTimeoutOption = "health_timeout"
)

const installHint = "install it with: npm install -g opencode-ai (or set the backend option binary, or " + BinaryEnv + ", to its path), or give --server-url of a running `opencode serve`"

// Bounds of the health check that opens every session. A harness often
// runs `opencode serve &` and avenor at once: a connection is refused
// until the server listens, and one made while it is still starting can be
// accepted and never answered. So each try has a fresh connection and a
// short deadline, and tries go on, with a capped pause between them, until
// the budget is spent.
const (
	// HealthTryTimeout bounds one GET /global/health.
	HealthTryTimeout = 2 * time.Second
	// DefaultHealthTimeout is the budget of all tries; option
	// health_timeout (HealthTimeoutOption) changes it.
	DefaultHealthTimeout = 60 * time.Second
	healthPauseMin       = 100 * time.Millisecond
	healthPauseMax       = time.Second
)

// Other bounds of the backend.
const (
	connectTimeout = 10 * time.Second
	// abortWait is how long a cancelled turn waits for the server to end
	// the blocking message request before it gives up on it.
	abortWait = 3 * time.Second
	// Reconnect backoff of the SSE stream.
	backoffMin = 50 * time.Millisecond
	backoffMax = 5 * time.Second
)

// EventTypes is every event type an opencode-http session emits.
var EventTypes = []runtime.EventType{
	runtime.EventMessageChunk, runtime.EventThoughtChunk,
	runtime.EventToolCall, runtime.EventToolCallUpdate,
}

// Backend is the opencode-http backend.
type Backend struct{}

// New returns the opencode-http backend.
func New() runtime.Backend { return Backend{} }

// Info describes the backend. Permission relay is "unverified" as in the
// contract's matrix (docs/backends.md#capability-matrix).
func (Backend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:        Name,
		Description: "OpenCode server over HTTP and SSE: --server-url, or an `opencode serve` of its own per session",
		// The modes and MCP servers go into the config of the `opencode
		// serve` the plugin starts; an external server's are its own, so
		// with --server-url they are refused.
		Capabilities: runtime.Supports(
			runtime.CapNewSessions, runtime.CapResume, runtime.CapPrompt, runtime.CapCancel,
			runtime.CapEventStreaming, runtime.CapModelSelection, runtime.CapExternalServerURL,
			runtime.ModeCapability(runtime.ModeDefault), runtime.ModeCapability(runtime.ModeAcceptEdits),
			runtime.ModeCapability(runtime.ModePlan), runtime.ModeCapability(runtime.ModeFullAccess),
			runtime.CapMCPServers, runtime.CapUsageReporting,
		).
			With(runtime.CapPermissionRelay, runtime.Unverified),
		ResumeScope: runtime.ResumeCrossProcess,
		EventTypes:  EventTypes,
	}
}

func lookup(env map[string]string, k string) string {
	if v, ok := env[k]; ok {
		return v
	}
	return os.Getenv(k)
}

// Check asks the server's health when a URL is configured, otherwise
// whether the opencode binary answers --version. It tries once: it reports
// readiness now (`avenor backends` checks every backend in one bounded
// time), it does not wait for a server to come up as Open does.
func (Backend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	if u := lookup(req.Env, ServerURLEnv); u != "" {
		c, err := newClient(u, lookup(req.Env, UsernameEnv), lookup(req.Env, PasswordEnv), "")
		if err != nil {
			return runtime.Readiness{Message: fmt.Sprintf("%s: %s: %v", Name, ServerURLEnv, err)}
		}
		v, err := c.fresh().health(ctx)
		if err != nil {
			return runtime.Readiness{Message: fmt.Sprintf("%s: OpenCode server %s is not reachable: %v", Name, c, err)}
		}
		return runtime.Readiness{Ready: true, Version: v, Auth: "unknown"}
	}
	bin := agentproc.ResolveBinary("opencode", BinaryEnv, req.Options, req.Env)
	return agentproc.Check(ctx, Name, bin, agentproc.Environ(req.Env, nil), installHint)
}

// errNotHealthy is a health answer with healthy false.
var errNotHealthy = errors.New("the server says it is not healthy")

// health is one GET /global/health, within HealthTryTimeout; it returns
// the server's version.
func (c *client) health(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, HealthTryTimeout)
	defer cancel()
	var h struct {
		Healthy bool   `json:"healthy"`
		Version string `json:"version"`
	}
	if err := c.do(ctx, "GET", "/global/health", nil, &h); err != nil {
		return "", err
	}
	if !h.Healthy {
		return h.Version, fmt.Errorf("GET /global/health: %w", errNotHealthy)
	}
	return h.Version, nil
}

// waitHealthy tries GET /global/health, each time on a fresh connection,
// until the server answers healthy, answers something that will not change
// by waiting (a 401, a 404, a non-JSON answer), or budget is spent.
func waitHealthy(ctx context.Context, c *client, budget time.Duration) (string, error) {
	fresh := c.fresh()
	defer fresh.http.CloseIdleConnections()
	bctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	pause := healthPauseMin
	var last error // the last try's error, not one cut short by the budget
	for tries := 1; ; tries++ {
		v, err := fresh.health(bctx)
		if err == nil {
			return v, nil
		}
		if last == nil || bctx.Err() == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		err = last
		if !healthRetryable(err) {
			return "", fmt.Errorf("OpenCode server %s: %v", c, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
			pause = min(2*pause, healthPauseMax)
			continue
		case <-bctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil { // the run ended first, not the budget
			return "", fmt.Errorf("OpenCode server %s: stopped waiting for GET /global/health after %d tries: %v; last error: %v", c, tries, ctx.Err(), err)
		}
		return "", fmt.Errorf("OpenCode server %s did not answer GET /global/health within %s: %d tries, each on a fresh connection and within %s; last error: %v; "+
			"is `opencode serve` running there? To wait longer, raise [backends.%s] options.%s",
			c, budget, tries, HealthTryTimeout, err, Name, HealthTimeoutOption)
	}
}

// healthRetryable says whether a failed health try may succeed later: no
// connection, no answer in time, a server error or "not healthy" — what a
// server that is still starting gives.
func healthRetryable(err error) bool {
	var se *statusError
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, errUnauthorized), errors.Is(err, errBadAnswer):
		return false
	case errors.As(err, &se):
		return se.code >= 500
	}
	return true
}

// healthBudget is option health_timeout: a Go duration or a number of
// seconds, more than zero.
func healthBudget(options map[string]any) (time.Duration, error) {
	v, ok := options[HealthTimeoutOption]
	if !ok || v == nil {
		return DefaultHealthTimeout, nil
	}
	var d time.Duration
	switch x := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			d = -1
		}
	case float64:
		d = time.Duration(x * float64(time.Second))
	case int64:
		d = time.Duration(x) * time.Second
	case int:
		d = time.Duration(x) * time.Second
	default:
		d = -1
	}
	if d <= 0 {
		return 0, runtime.Errorf(runtime.FaultUser, "%s: [backends.%s] options.%s = %v: want a duration such as \"90s\" or a number of seconds, more than 0",
			Name, Name, HealthTimeoutOption, v)
	}
	return d, nil
}

// Open connects to the server (or starts one), creates or resumes the
// session and opens the event stream.
func (Backend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: --dir %q: %v", Name, req.Dir, err)
	}
	external := req.ServerURL != "" || lookup(req.Env, ServerURLEnv) != ""
	if external && (req.PermissionMode != "" || len(req.Launch.MCPServers) > 0) {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: --permission-mode and --mcp-config go into the config of the `opencode serve` the plugin starts; an external server (--server-url or %s) keeps its own: drop it to let the plugin start one", Name, ServerURLEnv).WithCode(runtime.CodeUnsupported)
	}
	var model *modelRef
	if req.Model != "" {
		p, m, ok := strings.Cut(req.Model, "/")
		if !ok || p == "" || m == "" {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: --model %q: want provider/model, e.g. anthropic/claude-sonnet-4-5", Name, req.Model)
		}
		model = &modelRef{ProviderID: p, ModelID: m}
	}
	budget, err := healthBudget(req.Options)
	if err != nil {
		return nil, err
	}
	s := &session{host: host, log: host.Logger().Named(Name), agent: req.Agent, model: model}
	s.Runner = turn.New(turn.Config{Backend: Name, Interrupt: func(*turn.Turn) { s.abort() }})
	serverURL := req.ServerURL
	if serverURL == "" {
		serverURL = lookup(req.Env, ServerURLEnv)
	}
	user, pass := lookup(req.Env, UsernameEnv), lookup(req.Env, PasswordEnv)
	if serverURL == "" {
		srv, err := startServer(ctx, req, dir, s.log)
		if err != nil {
			return nil, err
		}
		s.srv = srv
		serverURL, user, pass = srv.url, srv.user, srv.pass
	}
	directory := ""
	if req.DirExplicit || explicitDir(req.Options) {
		directory = dir
	}
	s.c, err = newClient(serverURL, user, pass, directory)
	if err != nil {
		s.stopServer()
		return nil, runtime.Errorf(runtime.FaultUser, "%s: --server-url: %v", Name, err)
	}
	if err := s.open(ctx, req.ResumeSessionID, budget); err != nil {
		s.stopServer()
		return nil, err
	}
	return s, nil
}

func explicitDir(options map[string]any) bool {
	switch v := options[ExplicitDirOption].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

func (s *session) open(ctx context.Context, resume string, healthBudget time.Duration) error {
	v, err := waitHealthy(ctx, s.c, healthBudget)
	if err != nil {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %v", Name, err)
	}
	s.version = v
	var info struct {
		ID string `json:"id"`
	}
	if resume != "" {
		err = s.c.do(ctx, "GET", "/session/"+resume, nil, &info)
		if errors.Is(err, errNotFound) {
			return runtime.Errorf(runtime.FaultUser, "%s: --resume %q: %v on %s", Name, resume, runtime.ErrSessionNotFound, s.c)
		}
		if err == nil && info.ID == "" {
			info.ID = resume
		}
	} else {
		err = s.c.do(ctx, "POST", "/session", map[string]any{}, &info)
		if err == nil && info.ID == "" {
			err = errors.New("POST /session: the answer has no id")
		}
	}
	if err != nil {
		return runtime.Errorf(runtime.FaultRuntime, "%s: %v", Name, err)
	}
	s.id = info.ID
	return s.startEvents(ctx)
}
