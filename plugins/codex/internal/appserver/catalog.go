package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/jsonrpc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the catalog's own app-server (`avenor backends --models`).
const (
	// catalogMaxLine bounds one line of its output: a model list page is
	// some kilobytes.
	catalogMaxLine = 4 << 20
	// catalogMaxPages bounds model/list's paging.
	catalogMaxPages = 10
	// catalogStopGrace is how long it has to exit after stdin closes.
	catalogStopGrace = time.Second
)

// modelListPage is model/list's answer (runtime-protocols.md §3.3).
type modelListPage struct {
	Data []struct {
		ID          string `json:"id"`
		Model       string `json:"model"`
		DisplayName string `json:"displayName"`
		Hidden      bool   `json:"hidden"`
	} `json:"data"`
	NextCursor *string `json:"nextCursor"`
}

// ParseModelList reads one page of model/list: the models Codex shows (not
// the hidden ones), their id what --model takes, and the cursor of the
// next page ("" when this is the last).
func ParseModelList(raw json.RawMessage) ([]runtime.Model, string, error) {
	var page modelListPage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", fmt.Errorf("model/list answered %s", runtime.Truncate(string(raw), 120))
	}
	var models []runtime.Model
	for _, m := range page.Data {
		id := m.ID
		if id == "" {
			id = m.Model
		}
		if id == "" || m.Hidden {
			continue
		}
		models = append(models, runtime.Model{ID: id, Name: m.DisplayName})
	}
	next := ""
	if page.NextCursor != nil {
		next = *page.NextCursor
	}
	return models, next, nil
}

// ParseAccount reads account/read: authenticated with an account;
// required when there is none and Codex says its provider needs OpenAI's
// auth; unknown when the configured provider is another one (its key is
// read when a thread starts) or the answer is not readable.
func ParseAccount(raw json.RawMessage) (runtime.AuthState, string) {
	var a struct {
		Account *struct {
			Type string `json:"type"`
		} `json:"account"`
		RequiresOpenaiAuth *bool `json:"requiresOpenaiAuth"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return runtime.AuthUnknown, "cannot read Codex's account/read answer"
	}
	switch {
	case a.Account != nil:
		return runtime.AuthAuthenticated, "Codex account: " + runtime.Truncate(a.Account.Type, 40)
	case a.RequiresOpenaiAuth != nil && *a.RequiresOpenaiAuth:
		return runtime.AuthRequired, "Codex has no account; log in with `codex login` (or `codex login --with-api-key`)"
	case a.RequiresOpenaiAuth != nil:
		return runtime.AuthUnknown, "Codex's model provider is not OpenAI: its key is read when a thread starts"
	}
	return runtime.AuthUnknown, "Codex's account/read answer says nothing of auth"
}

// Catalog starts its own `codex app-server`, without a thread, and asks
// model/list (every page, bounded) and account/read, then stops it; all of
// it within agentproc.StatusTimeout.
func (backend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	c := runtime.Catalog{ModelsSupported: true, Auth: runtime.AuthUnknown}
	ctx, cancel := context.WithTimeout(ctx, agentproc.StatusTimeout)
	defer cancel()
	proc, err := agentproc.Start(ctx, agentproc.Spec{
		Path: binary(req.Options, req.Env), Args: []string{"app-server"}, Env: agentproc.Environ(req.Env, nil),
		MaxLineBytes: catalogMaxLine, InstallHint: installHint, CancelGrace: catalogStopGrace,
	})
	if err != nil {
		c.ModelsError = fmt.Sprintf("%s: %v", Name, err)
		return c.Bounded()
	}
	defer func() { _ = proc.Stop(catalogStopGrace) }()
	conn := jsonrpc.NewConn(jsonrpc.ProcessLines(proc.Lines()), noVersionWriter{proc.Stdin()}, quietClient{},
		jsonrpc.ConnOptions{MaxFrame: catalogMaxLine})
	defer conn.Close()

	var p initializeParams
	p.ClientInfo = clientInfo{Name: clientName, Version: clientVersion}
	p.Capabilities.OptOut = []string{"account/rateLimits/updated"}
	if err := conn.Call(ctx, "initialize", p, nil); err != nil {
		c.ModelsError = fmt.Sprintf("%s: initialize: %v", Name, err)
		return c.Bounded()
	}
	if err := conn.Notify("initialized", map[string]any{}); err != nil {
		c.ModelsError = fmt.Sprintf("%s: initialized: %v", Name, err)
		return c.Bounded()
	}
	var account json.RawMessage
	if err := conn.Call(ctx, "account/read", map[string]any{}, &account); err != nil {
		c.AuthMessage = "account/read: " + err.Error()
	} else {
		c.Auth, c.AuthMessage = ParseAccount(account)
	}
	cursor := ""
	for page := 0; ; page++ {
		if page == catalogMaxPages || len(c.Models) > runtime.MaxModels {
			c.ModelsTruncated = true
			break
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var raw json.RawMessage
		if err := conn.Call(ctx, "model/list", params, &raw); err != nil {
			c.ModelsError = fmt.Sprintf("%s: model/list: %v", Name, err)
			break
		}
		models, next, err := ParseModelList(raw)
		if err != nil {
			c.ModelsError = fmt.Sprintf("%s: %v", Name, err)
			break
		}
		c.Models = append(c.Models, models...)
		if next == "" || next == cursor {
			break
		}
		cursor = next
	}
	return c.Bounded()
}

// quietClient is the catalog's side of the connection: it takes Codex's
// notifications and refuses any request (no thread, nothing to approve).
type quietClient struct{}

func (quietClient) HandleRequest(_ context.Context, method string, _ json.RawMessage) (any, *jsonrpc.RPCError) {
	return nil, jsonrpc.MethodNotFound(method)
}

func (quietClient) HandleNotification(string, json.RawMessage) {}
