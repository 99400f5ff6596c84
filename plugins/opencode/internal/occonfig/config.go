// Package occonfig reads OpenCode's configuration the way OpenCode layers it,
// for the little avenor needs of it: which model an agent is configured with
// (so --agent without --model selects it, docs/cli.md#avenor-run) and whether it is a
// subagent (which avenor makes selectable with a per-run config, docs/backends.md#opencode-acp-plugin-opencode). Both
// opencode backends (opencode-acp, and opencode-http later) use it.
package occonfig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Env looks up the runtime's environment.
type Env func(key string) string

// Agent is what the configuration says of one agent.
type Agent struct {
	Name  string
	Model string // provider/model, "" when not configured
	Mode  string // primary, subagent, all, or "" when not configured
	// Sources lists where the agent was found, lowest precedence first.
	Sources []string
}

// Layer is one configuration source, as OpenCode orders them.
type Layer struct {
	Source string         // a path, or "OPENCODE_CONFIG_CONTENT"
	Config map[string]any // the parsed document
}

// configFiles are the names OpenCode reads in a config directory.
var configFiles = []string{"config.json", "opencode.json", "opencode.jsonc"}

// Layers returns OpenCode's configuration sources for a project directory,
// lowest precedence first: the global config ($XDG_CONFIG_HOME/opencode,
// default ~/.config/opencode), OPENCODE_CONFIG, the project's opencode.json
// and opencode.jsonc (from the git root down to dir), the .opencode
// directories on the same path, OPENCODE_CONFIG_DIR, and last the inline
// OPENCODE_CONFIG_CONTENT. A file that does not parse is an error naming it.
func Layers(dir string, getenv Env) ([]Layer, error) {
	var layers []Layer
	add := func(path string) error {
		data, err := os.ReadFile(path)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return fmt.Errorf("reading OpenCode config %s: %w", path, err)
		}
		cfg, err := parse(data)
		if err != nil {
			return fmt.Errorf("OpenCode config %s: %w", path, err)
		}
		layers = append(layers, Layer{Source: path, Config: cfg})
		return nil
	}
	addDir := func(d string) error {
		for _, name := range configFiles {
			if err := add(filepath.Join(d, name)); err != nil {
				return err
			}
		}
		return addAgentFiles(&layers, d)
	}
	if gd := GlobalDir(getenv); gd != "" {
		if err := addDir(gd); err != nil {
			return nil, err
		}
	}
	if p := getenv("OPENCODE_CONFIG"); p != "" {
		if err := add(p); err != nil {
			return nil, err
		}
	}
	for _, d := range projectDirs(dir) {
		for _, name := range []string{"opencode.json", "opencode.jsonc"} {
			if err := add(filepath.Join(d, name)); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range projectDirs(dir) {
		if err := addDir(filepath.Join(d, ".opencode")); err != nil {
			return nil, err
		}
	}
	if d := getenv("OPENCODE_CONFIG_DIR"); d != "" {
		if err := addDir(d); err != nil {
			return nil, err
		}
	}
	if c := getenv("OPENCODE_CONFIG_CONTENT"); strings.TrimSpace(c) != "" {
		cfg, err := parse([]byte(c))
		if err != nil {
			return nil, fmt.Errorf("OPENCODE_CONFIG_CONTENT: %w", err)
		}
		layers = append(layers, Layer{Source: "OPENCODE_CONFIG_CONTENT", Config: cfg})
	}
	return layers, nil
}

// GlobalDir is OpenCode's global config directory.
func GlobalDir(getenv Env) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "opencode")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "opencode")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "opencode")
	}
	return ""
}

// projectDirs lists the directories from the project's root (the nearest
// enclosing git work tree, else dir itself) down to dir, outermost first.
func projectDirs(dir string) []string {
	dir = filepath.Clean(dir)
	var chain []string
	root := ""
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			root = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if root == "" {
		chain = []string{dir}
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}

func parse(data []byte) (map[string]any, error) {
	var cfg map[string]any
	if err := json.Unmarshal(StripJSONC(data), &cfg); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	return cfg, nil
}

// addAgentFiles reads markdown agents (agent/<name>.md, agents/<name>.md)
// in a config directory: their front matter's model and mode.
func addAgentFiles(layers *[]Layer, dir string) error {
	for _, sub := range []string{"agent", "agents"} {
		matches, _ := filepath.Glob(filepath.Join(dir, sub, "*.md"))
		for _, path := range matches {
			data, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("reading OpenCode agent %s: %w", path, err)
			}
			fm := frontMatter(data)
			agent := map[string]any{}
			for _, k := range []string{"model", "mode"} {
				if v, ok := fm[k]; ok {
					agent[k] = v
				}
			}
			name := strings.TrimSuffix(filepath.Base(path), ".md")
			*layers = append(*layers, Layer{Source: path, Config: map[string]any{"agent": map[string]any{name: agent}}})
		}
	}
	return nil
}

// frontMatter reads the simple "key: value" lines of a markdown file's
// YAML front matter.
func frontMatter(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return out
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") {
			continue // nested YAML: not needed
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		out[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return out
}

var envRef = regexp.MustCompile(`\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// ResolveAgent finds agent name across the layers; the last layer that
// sets a field wins. {env:VAR} in a value is substituted, as OpenCode does.
func ResolveAgent(layers []Layer, name string, getenv Env) Agent {
	a := Agent{Name: name}
	for _, l := range layers {
		agents, _ := l.Config["agent"].(map[string]any)
		entry, ok := agents[name].(map[string]any)
		if !ok {
			continue
		}
		a.Sources = append(a.Sources, l.Source)
		if m, ok := entry["model"].(string); ok && m != "" {
			a.Model = envRef.ReplaceAllStringFunc(m, func(ref string) string { return getenv(envRef.FindStringSubmatch(ref)[1]) })
		}
		if m, ok := entry["mode"].(string); ok && m != "" {
			a.Mode = m
		}
	}
	return a
}

// ModelEndpoints are the host:port destinations OpenCode's model requests
// go to under layers, for --sandbox-network model: the baseURL
// (provider.<id>.options.baseURL, the last layer naming it wins) of the
// provider of model ("provider/model"; "" is the configured model) and of
// the configured small_model. A model whose provider names no baseURL (a
// built-in provider's default endpoint) gives none: the caller refuses
// rather than guess.
func ModelEndpoints(layers []Layer, model string) ([]runtime.NetDest, error) {
	small := ""
	baseURLs := map[string]string{}
	for _, l := range layers {
		if m, ok := l.Config["model"].(string); ok && model == "" {
			model = m
		}
		if m, ok := l.Config["small_model"].(string); ok {
			small = m
		}
		providers, _ := l.Config["provider"].(map[string]any)
		for id, p := range providers {
			pm, _ := p.(map[string]any)
			opts, _ := pm["options"].(map[string]any)
			if u, ok := opts["baseURL"].(string); ok && u != "" {
				baseURLs[id] = u
			}
		}
	}
	var out []runtime.NetDest
	for i, m := range []string{model, small} {
		id, _, ok := strings.Cut(m, "/")
		u := baseURLs[id]
		if !ok || u == "" {
			if i == 0 {
				return nil, nil
			}
			continue
		}
		d, err := runtime.EndpointOfURL(u)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", id, err)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}
