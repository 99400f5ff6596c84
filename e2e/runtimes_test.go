//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
)

// runtimeSpec is one real CLI: how to point it at the fake LLM offline
// (shared/reference/real-runtimes.md) and how to start it in ACP mode.
type runtimeSpec struct {
	name    string // opencode, gemini
	backend string // the avenor backend that drives it
	// setup writes the CLI's configuration into the world and adds its
	// environment.
	setup func(w *world)
	// acpArgs start the CLI as an ACP agent over stdio in dir, as the
	// plugin does (docs/backends.md#opencode-acp-plugin-opencode, docs/backends.md#gemini-acp-plugin-gemini).
	acpArgs func(dir string) []string
	bin     func() string
	// model is the model id the CLI asks the fake LLM for by default.
	model string
}

var opencode = &runtimeSpec{
	name: "opencode", backend: "opencode-acp", model: "fake-model",
	bin: func() string { return bins.opencode },
	acpArgs: func(dir string) []string {
		return []string{"acp", "--pure", "--log-level", "WARN", "--cwd", dir}
	},
	setup: func(w *world) {
		model := func(name string) map[string]any {
			return map[string]any{"name": name, "tool_call": true, "limit": map[string]any{"context": 100000, "output": 8000}}
		}
		cfg := map[string]any{
			"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
			"model": "fake/fake-model", "small_model": "fake/fake-model",
			"provider": map[string]any{"fake": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Fake LLM",
				"options": map[string]any{"baseURL": w.llm.OpenAIBaseURL(), "apiKey": "fake-key"},
				"models":  map[string]any{"fake-model": model("Fake Model"), "fake-model-2": model("Fake Model 2")},
			}},
			// bash is "allow" by default in opencode: ask, so that the
			// permission round trip happens.
			"permission": map[string]any{"bash": "ask", "edit": "ask"},
		}
		b, _ := json.MarshalIndent(cfg, "", "  ")
		w.writeFile(filepath.Join(w.config, "opencode", "opencode.json"), string(b))
		w.env = append(w.env,
			"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1")
	},
}

var gemini = &runtimeSpec{
	name: "gemini", backend: "gemini-acp", model: "gemini-2.5-flash",
	bin: func() string { return bins.gemini },
	acpArgs: func(string) []string {
		return []string{"--acp", "--approval-mode", "default"}
	},
	setup: func(w *world) {
		settings := map[string]any{
			"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
			"security": map[string]any{"folderTrust": map[string]any{"enabled": false},
				"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"model": map[string]any{"name": "gemini-2.5-flash"},
		}
		b, _ := json.MarshalIndent(settings, "", "  ")
		w.writeFile(filepath.Join(w.home, ".gemini", "settings.json"), string(b))
		w.env = append(w.env, "GOOGLE_GEMINI_BASE_URL="+w.llm.URL, "GEMINI_API_KEY=fake-key", "GEMINI_CLI_NO_RELAUNCH=true")
	},
}

var runtimes = []*runtimeSpec{opencode, gemini}
