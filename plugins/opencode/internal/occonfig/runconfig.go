package occonfig

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/sdk/safefile"
)

// RunConfig is the per-run config of docs/backends.md#opencode-acp-plugin-opencode that makes a subagent
// selectable: OPENCODE_CONFIG's file merged with OPENCODE_CONFIG_CONTENT
// and agent.<name>.mode = "all", written to
// $TMPDIR/avenor-opencode-acp-<run id>-<random>.json.
type RunConfig struct {
	Path string
	// Content is the new OPENCODE_CONFIG_CONTENT: the inline config with
	// the same override, so that it wins over a project config too
	// (OpenCode gives the inline config the highest precedence).
	Content string
}

// WriteRunConfig writes the per-run config for agent. Remove the file when
// the session ends.
func WriteRunConfig(runID, agent string, getenv Env) (RunConfig, error) {
	merged := map[string]any{}
	if p := getenv("OPENCODE_CONFIG"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			return RunConfig{}, fmt.Errorf("reading OPENCODE_CONFIG %s: %w", p, err)
		}
		cfg, err := parse(data)
		if err != nil {
			return RunConfig{}, fmt.Errorf("OPENCODE_CONFIG %s: %w", p, err)
		}
		Merge(merged, cfg)
	}
	inline := map[string]any{}
	if c := getenv("OPENCODE_CONFIG_CONTENT"); strings.TrimSpace(c) != "" {
		cfg, err := parse([]byte(c))
		if err != nil {
			return RunConfig{}, fmt.Errorf("OPENCODE_CONFIG_CONTENT: %w", err)
		}
		inline = cfg
		Merge(merged, cfg)
	}
	override := map[string]any{"agent": map[string]any{agent: map[string]any{"mode": "all"}}}
	Merge(merged, override)
	Merge(inline, override)

	data, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return RunConfig{}, err
	}
	if runID == "" {
		runID = fmt.Sprint(os.Getpid())
	}
	path, err := writePrivate(os.TempDir(), "avenor-opencode-acp-"+sanitize(runID), data)
	if err != nil {
		return RunConfig{}, fmt.Errorf("writing the per-run OpenCode config: %w", err)
	}
	content, err := json.Marshal(inline)
	if err != nil {
		return RunConfig{}, err
	}
	return RunConfig{Path: path, Content: string(content)}, nil
}

// writePrivate writes data to a new <dir>/<prefix>-<random>.json, 0600.
// The config may hold provider API keys: at a predictable name (a fixed
// --run-id) another user could have made the file first, readable, and
// os.WriteFile would have filled theirs. The random name cannot be guessed
// and safefile.Create refuses anything already there, a symlink included.
func writePrivate(dir, prefix string, data []byte) (string, error) {
	if err := safefile.CheckDir(dir); err != nil {
		return "", err
	}
	var (
		f    *os.File
		path string
		err  error
	)
	for range 8 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		path = filepath.Join(dir, prefix+"-"+hex.EncodeToString(b[:])+".json")
		if f, err = safefile.Create(path, 0o600); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, s)
}

// Merge deep-merges src into dst: objects merge, anything else replaces.
func Merge(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				Merge(dv, sv)
				continue
			}
			cp := map[string]any{}
			Merge(cp, sv)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}
