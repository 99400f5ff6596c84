package ochttp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/runtime"
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
	// every call then carries ?directory=<dir> (contract decision 14).
	// OpenRequest.DirExplicit is the host's own signal; the option stays
	// for hosts older than it.
	ExplicitDirOption = "explicit_dir"
)

const installHint = "install it with: npm install -g opencode-ai (or set the backend option binary, or " + BinaryEnv + ", to its path), or give --server-url of a running `opencode serve`"

// Bounds of the backend.
const (
	healthTimeout  = 10 * time.Second
	connectTimeout = 10 * time.Second
	// abortWait is how long a cancelled turn waits for the server to end
	// the blocking message request before it gives up on it.
	abortWait = 3 * time.Second
	// Reconnect backoff of the SSE stream.
	backoffMin = 50 * time.Millisecond
	backoffMax = 5 * time.Second
)

// EventTypes is every event type an opencode-http session emits.
var EventTypes = []string{
	runtime.EventMessageChunk, runtime.EventThoughtChunk,
	runtime.EventToolCall, runtime.EventToolCallUpdate,
}

// Backend is the opencode-http backend.
type Backend struct{}

// New returns the opencode-http backend.
func New() runtime.Backend { return Backend{} }

// Info describes the backend. Permission relay is "unverified" as in the
// contract's matrix (§7.12).
func (Backend) Info() runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:        Name,
		Description: "OpenCode server over HTTP and SSE: --server-url, or an `opencode serve` of its own per session",
		Capabilities: map[string]string{
			runtime.CapNewSessions:         runtime.Supported,
			runtime.CapResume:              runtime.Supported,
			runtime.CapPrompt:              runtime.Supported,
			runtime.CapCancel:              runtime.Supported,
			runtime.CapEventStreaming:      runtime.Supported,
			runtime.CapPermissionRelay:     runtime.Unverified,
			runtime.CapModelSelection:      runtime.Supported,
			runtime.CapExternalServerURL:   runtime.Supported,
			runtime.CapSubprocessDiscovery: runtime.Unsupported,
		},
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
// whether the opencode binary answers --version.
func (Backend) Check(ctx context.Context, req runtime.CheckRequest) runtime.Readiness {
	if u := lookup(req.Env, ServerURLEnv); u != "" {
		c, err := newClient(u, lookup(req.Env, UsernameEnv), lookup(req.Env, PasswordEnv), "")
		if err != nil {
			return runtime.Readiness{Message: fmt.Sprintf("%s: %s: %v", Name, ServerURLEnv, err)}
		}
		v, err := health(ctx, c)
		if err != nil {
			return runtime.Readiness{Message: fmt.Sprintf("%s: %v", Name, err)}
		}
		return runtime.Readiness{Ready: true, Version: v, Auth: "unknown"}
	}
	bin := acp.ResolveBinary("opencode", BinaryEnv, req.Options, req.Env)
	return acp.Check(ctx, Name, bin, acp.Environ(req.Env, nil), installHint)
}

// health is GET /global/health; it returns the server's version.
func health(ctx context.Context, c *client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	var h struct {
		Healthy bool   `json:"healthy"`
		Version string `json:"version"`
	}
	if err := c.do(ctx, "GET", "/global/health", nil, &h); err != nil {
		return "", fmt.Errorf("OpenCode server %s is not reachable: %v", c, err)
	}
	if !h.Healthy {
		return h.Version, fmt.Errorf("OpenCode server %s says it is not healthy", c)
	}
	return h.Version, nil
}

// Open connects to the server (or starts one), creates or resumes the
// session and opens the event stream.
func (Backend) Open(ctx context.Context, req runtime.OpenRequest, host runtime.Host) (runtime.Session, error) {
	dir, err := filepath.Abs(req.Dir)
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultUser, "%s: --dir %q: %v", Name, req.Dir, err)
	}
	var model *modelRef
	if req.Model != "" {
		p, m, ok := strings.Cut(req.Model, "/")
		if !ok || p == "" || m == "" {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: --model %q: want provider/model, e.g. anthropic/claude-sonnet-4-5", Name, req.Model)
		}
		model = &modelRef{ProviderID: p, ModelID: m}
	}
	s := &session{host: host, log: host.Logger().Named(Name), agent: req.Agent, model: model}
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
	if err := s.open(ctx, req.ResumeSessionID); err != nil {
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

func (s *session) open(ctx context.Context, resume string) error {
	v, err := health(ctx, s.c)
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
