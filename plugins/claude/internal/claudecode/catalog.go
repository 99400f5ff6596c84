package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the catalog's own `claude -p` (`avenor backends --models`).
const (
	// catalogMaxLine bounds one line of its output: the initialize answer
	// lists every command and agent, some tens of kilobytes.
	catalogMaxLine = 4 << 20
	// catalogStopGrace is how long it has to exit after stdin closes.
	catalogStopGrace = time.Second
	// catalogCacheFor is how long one answer serves all three backends.
	catalogCacheFor = 30 * time.Second
)

// catalogArgs start Claude Code headless with stream-json, keeping no
// session: the catalog sends initialize and no prompt, so no model is
// called.
var catalogArgs = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--no-session-persistence"}

// catalogRequestID names the catalog's initialize control request.
const catalogRequestID = "avenor_catalog"

// ParseInitializeModels reads the models of the initialize control
// response (its "models": value, what --model takes, and displayName), and
// reports whether the answer had a models list at all.
func ParseInitializeModels(raw json.RawMessage) ([]runtime.Model, bool) {
	var r struct {
		Models *[]struct {
			Value       string `json:"value"`
			DisplayName string `json:"displayName"`
		} `json:"models"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Models == nil {
		return nil, false
	}
	var models []runtime.Model
	for _, m := range *r.Models {
		if m.Value != "" {
			models = append(models, runtime.Model{ID: m.Value, Name: m.DisplayName})
		}
	}
	return models, true
}

// ParseAuthStatus reads `claude auth status` (JSON): loggedIn true is
// authenticated (an API key or a login), false is required; anything
// else is unknown.
func ParseAuthStatus(out []byte) (runtime.AuthState, string) {
	var s struct {
		LoggedIn     *bool  `json:"loggedIn"`
		AuthMethod   string `json:"authMethod"`
		APIKeySource string `json:"apiKeySource"`
	}
	if json.Unmarshal(out, &s) != nil || s.LoggedIn == nil {
		return runtime.AuthUnknown, "cannot read `claude auth status`'s answer"
	}
	if !*s.LoggedIn {
		return runtime.AuthRequired, "`claude auth status`: not logged in; run `claude auth login` or set ANTHROPIC_API_KEY"
	}
	msg := "`claude auth status`: logged in"
	if m := runtime.Truncate(s.AuthMethod, 40); m != "" {
		msg += " (" + m
		if src := runtime.Truncate(s.APIKeySource, 60); src != "" {
			msg += " from " + src
		}
		msg += ")"
	}
	return runtime.AuthAuthenticated, msg
}

// catalogs is the one answer the plugin's three backends share: they run
// the same claude, so asking it once serves all three. It holds a
// read-only answer for catalogCacheFor, nothing a session uses.
var catalogs catalogCache

type catalogCache struct {
	mu     sync.Mutex
	key    string
	at     time.Time
	answer runtime.Catalog
}

// catalogFor is the catalog of the claude the request names.
func catalogFor(ctx context.Context, backend string, req runtime.CheckRequest) runtime.Catalog {
	bin, env := binary(req.Options, req.Env), agentproc.Environ(req.Env, nil)
	catalogs.mu.Lock()
	defer catalogs.mu.Unlock()
	key := bin + "\x00" + strings.Join(env, "\x00")
	if catalogs.key == key && time.Since(catalogs.at) < catalogCacheFor {
		return catalogs.answer
	}
	c := runtime.Catalog{ModelsSupported: true, Auth: runtime.AuthUnknown}
	if _, _, err := claudeVersion(ctx, bin, env); err != nil {
		c.ModelsError = err.Error()
		return c.Bounded()
	}
	// Side by side, each within agentproc.StatusTimeout.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, err := agentproc.RunStatus(ctx, bin, []string{"auth", "status"}, env)
		if err != nil {
			c.AuthMessage = err.Error()
		} else {
			c.Auth, c.AuthMessage = ParseAuthStatus(res.Stdout)
		}
	}()
	ictx, cancel := context.WithTimeout(ctx, agentproc.StatusTimeout)
	models, err := initializeModels(ictx, bin, env)
	cancel()
	wg.Wait()
	c.Models = models
	if err != nil {
		c.ModelsError = fmt.Sprintf("%s: %v", backend, err)
	}
	c = c.Bounded()
	if ctx.Err() == nil {
		catalogs.key, catalogs.at, catalogs.answer = key, time.Now(), c
	}
	return c
}

// initializeModels starts `claude -p` with stream-json, sends the
// initialize control request and reads the models of its answer, then
// stops it.
func initializeModels(ctx context.Context, bin string, env []string) ([]runtime.Model, error) {
	proc, err := agentproc.Start(ctx, agentproc.Spec{Path: bin, Args: catalogArgs, Env: env,
		MaxLineBytes: catalogMaxLine, InstallHint: installHint, CancelGrace: catalogStopGrace})
	if err != nil {
		return nil, err
	}
	defer func() { _ = proc.Stop(catalogStopGrace) }()
	req, _ := json.Marshal(map[string]any{"type": "control_request", "request_id": catalogRequestID,
		"request": map[string]any{"subtype": "initialize", "hooks": nil}})
	if _, err := proc.Stdin().Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("sending initialize: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer to initialize within %v", agentproc.StatusTimeout)
		case line, ok := <-proc.Lines():
			if !ok {
				return nil, fmt.Errorf("claude exited before answering initialize: %s", runtime.Truncate(strings.TrimSpace(proc.StderrTail()), 200))
			}
			if line.Err != nil {
				continue
			}
			var msg struct {
				Type     string          `json:"type"`
				Response controlResponse `json:"response"`
			}
			if json.Unmarshal(line.Data, &msg) != nil || msg.Type != "control_response" || msg.Response.RequestID != catalogRequestID {
				continue
			}
			if msg.Response.Subtype != "success" {
				return nil, fmt.Errorf("claude refused initialize: %s", runtime.Truncate(msg.Response.Error, 200))
			}
			models, ok := ParseInitializeModels(msg.Response.Response)
			if !ok {
				return nil, fmt.Errorf("this Claude Code's initialize answer lists no models")
			}
			return models, nil
		}
	}
}

// Catalog: the models Claude Code's stream-json initialize lists and
// `claude auth status`, the same for the three backends (one claude).
func (b *streamBackend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	return catalogFor(ctx, StreamName, req)
}

// Catalog: as claude-stream's (the same claude lists them).
func (b *ptyBackend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	return catalogFor(ctx, b.Info().Name, req)
}

// Catalog: as claude-stream's (the same claude lists them).
func (b *channelBackend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	return catalogFor(ctx, b.Info().Name, req)
}
