//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// catalogRow is a row of `avenor backends --models --json`.
type catalogRow struct {
	Backend      string            `json:"backend"`
	Ready        bool              `json:"ready"`
	Auth         string            `json:"auth"`
	AuthMessage  string            `json:"auth_message"`
	Capabilities map[string]string `json:"capabilities"`
	Models       []struct {
		ID string `json:"id"`
	} `json:"models"`
	ModelsError string `json:"models_error"`
}

func (r catalogRow) ids() []string {
	var ids []string
	for _, m := range r.Models {
		ids = append(ids, m.ID)
	}
	return ids
}

// backendsModels runs `avenor backends --models --json` in w and returns
// the rows of the named backends, failing when one is missing.
func backendsModels(t *testing.T, w *world, backends ...string) map[string]catalogRow {
	t.Helper()
	res := w.start("backends", "--models", "--json").wait()
	if res.code != 0 {
		t.Fatalf("avenor backends --models --json: %v", res)
	}
	var rows []catalogRow
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	out := map[string]catalogRow{}
	for _, r := range rows {
		out[r.Backend] = r
	}
	for _, b := range backends {
		r, ok := out[b]
		if !ok {
			t.Fatalf("no %s row:\n%s", b, res.stdout)
		}
		t.Logf("%s: ready %v, auth %s (%s), models %v, models_error %q", b, r.Ready, r.Auth, r.AuthMessage, r.ids(), r.ModelsError)
		switch r.Auth {
		case "authenticated", "required", "rejected", "unknown":
		default:
			t.Errorf("%s: auth %q outside authenticated|required|rejected|unknown", b, r.Auth)
		}
	}
	return out
}

func needPlugin(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-"+name)); err != nil {
		t.Fatalf("the %s plugin is not built (make build): %v", name, err)
	}
}

// TestModelsOpencode: both OpenCode backends list the fake provider's
// models from `opencode models`, ready as before.
func TestModelsOpencode(t *testing.T) {
	needPlugin(t, "opencode")
	w := newWorld(t, opencode, fakellm.Config{})
	rows := backendsModels(t, w, "opencode-acp", "opencode-http")
	for _, b := range []string{"opencode-acp", "opencode-http"} {
		r := rows[b]
		if !r.Ready || r.ModelsError != "" || r.Capabilities["model_listing"] != "supported" ||
			!slices.Contains(r.ids(), "fake/fake-model") || !slices.Contains(r.ids(), "fake/fake-model-2") {
			t.Errorf("%s: %+v", b, r)
		}
	}
}

// TestModelsPi: pi lists the fake provider's models of its models.json
// (`pi --list-models`), and since it lists them a key is there:
// authenticated.
func TestModelsPi(t *testing.T) {
	needPi(t)
	w := newWorld(t, piSpec, fakellm.Config{})
	r := backendsModels(t, w, "pi")["pi"]
	if !r.Ready || r.ModelsError != "" || r.Auth != "authenticated" ||
		!slices.Contains(r.ids(), "fake/fake-model") || !slices.Contains(r.ids(), "fake/fake-reasoner") {
		t.Errorf("pi: %+v", r)
	}
}

// TestModelsCodex: codex-app-server lists what the pinned Codex's
// model/list reports (its own catalog: the fake provider is not in it),
// and account/read's verdict for a non-OpenAI provider is unknown.
func TestModelsCodex(t *testing.T) {
	needPlugin(t, "codex")
	codex.bin = func() string { return codexBin(t) }
	w := newWorld(t, codex, fakellm.Config{})
	r := backendsModels(t, w, "codex-app-server")["codex-app-server"]
	if !r.Ready || r.ModelsError != "" || len(r.Models) == 0 || r.Capabilities["model_listing"] != "supported" || r.Auth != "unknown" {
		t.Errorf("codex-app-server: %+v", r)
	}
}

// TestModelsClaude: the Claude Code backends list the models of the pinned
// CLI's stream-json initialize answer; `claude auth status` sees the API
// key.
func TestModelsClaude(t *testing.T) {
	needPlugin(t, "claude")
	installClaude(t)
	w := newWorld(t, claudeStream, fakellm.Config{})
	rows := backendsModels(t, w, "claude-stream", "claude", "claude-channel")
	for _, b := range []string{"claude-stream", "claude", "claude-channel"} {
		r := rows[b]
		if !r.Ready || r.ModelsError != "" || len(r.Models) == 0 || r.Auth != "authenticated" {
			t.Errorf("%s: %+v", b, r)
		}
	}
}

// TestModelsGemini: gemini-acp reports its models only in a session's
// session/new, so it does not list them: capability unsupported, models
// [], still ready.
func TestModelsGemini(t *testing.T) {
	needPlugin(t, "gemini")
	w := newWorld(t, gemini, fakellm.Config{})
	r := backendsModels(t, w, "gemini-acp")["gemini-acp"]
	if !r.Ready || r.Capabilities["model_listing"] != "unsupported" || r.Models == nil || len(r.Models) != 0 || r.Auth != "unknown" {
		t.Errorf("gemini-acp: %+v", r)
	}
}
