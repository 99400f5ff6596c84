package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the project MCP config Claude Code reads.
const FileName = ".mcp.json"

// MaxFileBytes bounds the .mcp.json read (1 MiB): a project MCP config is a
// few hundred bytes, and a larger file is not one this package should
// rewrite.
const MaxFileBytes = 1 << 20

// serversKey is the object holding the server entries.
const serversKey = "mcpServers"

// Server is one stdio MCP server entry.
type Server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// Errors callers can test with errors.Is.
var (
	// ErrMalformed: the file is not a JSON object (or mcpServers is not
	// one); it is left untouched.
	ErrMalformed = errors.New("malformed MCP config")
	// ErrTooLarge: the file is over MaxFileBytes; it is left untouched.
	ErrTooLarge = errors.New("MCP config too large")
)

// Path is <dir>/.mcp.json.
func Path(dir string) string { return filepath.Join(dir, FileName) }

// Upsert sets mcpServers[name] = s in the file at path, creating the file
// when it is missing.
func Upsert(path, name string, s Server) error {
	if name == "" {
		return errors.New("mcpconfig: empty server name")
	}
	entry, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("mcpconfig: encoding server %q: %w", name, err)
	}
	_, err = edit(path, func(servers map[string]json.RawMessage) int {
		servers[name] = entry
		return 1
	})
	return err
}

// Remove deletes mcpServers[name]; it reports whether the entry was there.
// A missing file is no entry.
func Remove(path, name string) (bool, error) {
	n, err := edit(path, func(servers map[string]json.RawMessage) int {
		if _, ok := servers[name]; !ok {
			return 0
		}
		delete(servers, name)
		return 1
	})
	return n > 0, err
}

// RemovePrefix deletes every mcpServers entry whose name starts with prefix
// and returns how many it removed. A missing file removes none.
func RemovePrefix(path, prefix string) (int, error) {
	return edit(path, func(servers map[string]json.RawMessage) int {
		n := 0
		for k := range servers {
			if strings.HasPrefix(k, prefix) {
				delete(servers, k)
				n++
			}
		}
		return n
	})
}

// Servers returns the file's server entries by name (nil for a missing
// file).
func Servers(path string) (map[string]Server, error) {
	data, err := read(path)
	if err != nil || data == nil {
		return nil, err
	}
	_, servers, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]Server, len(servers))
	for k, v := range servers {
		var s Server
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
	}
	return out, nil
}

// Parse splits a .mcp.json into its top-level keys and its server entries.
// An empty or whitespace-only document is an empty object. Errors wrap
// ErrMalformed.
func Parse(data []byte) (top, servers map[string]json.RawMessage, err error) {
	top = map[string]json.RawMessage{}
	servers = map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) == 0 {
		return top, servers, nil
	}
	if err := decodeObject(data, &top); err != nil {
		return nil, nil, fmt.Errorf("%w: want a JSON object: %v", ErrMalformed, err)
	}
	if raw, ok := top[serversKey]; ok {
		if err := decodeObject(raw, &servers); err != nil {
			return nil, nil, fmt.Errorf("%w: %q must be an object of server entries: %v", ErrMalformed, serversKey, err)
		}
	}
	return top, servers, nil
}

// decodeObject decodes a JSON object; null, arrays and scalars are errors
// (json.Unmarshal would take null as "leave the map alone").
func decodeObject(data []byte, m *map[string]json.RawMessage) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return errors.New("not an object")
	}
	return json.Unmarshal(data, m)
}

// Render is the file content for top with servers in place of mcpServers:
// mcpServers is dropped when empty, and nil means the object is empty and
// the file should be deleted.
func Render(top, servers map[string]json.RawMessage) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(top)+1)
	for k, v := range top {
		out[k] = v
	}
	delete(out, serversKey)
	if len(servers) > 0 {
		s, err := json.Marshal(servers)
		if err != nil {
			return nil, err
		}
		out[serversKey] = s
	}
	if len(out) == 0 {
		return nil, nil
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// edit applies change to the file's servers under the directory lock and
// writes the result when change reports a change.
func edit(path string, change func(map[string]json.RawMessage) int) (int, error) {
	dir := filepath.Dir(path)
	unlock, err := lockDir(dir)
	if err != nil {
		return 0, fmt.Errorf("mcpconfig: locking %s: %w", dir, err)
	}
	defer unlock()
	data, err := read(path)
	if err != nil {
		return 0, err
	}
	top, servers, err := Parse(data)
	if err != nil {
		return 0, fmt.Errorf("%s: %w; fix or remove the file (it was left as it is)", path, err)
	}
	n := change(servers)
	if n == 0 {
		return 0, nil
	}
	out, err := Render(top, servers)
	if err != nil {
		return 0, fmt.Errorf("mcpconfig: encoding %s: %w", path, err)
	}
	if out == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, fmt.Errorf("mcpconfig: removing the now empty %s: %w", path, err)
		}
		return n, nil
	}
	if err := writeAtomic(path, out); err != nil {
		return 0, err
	}
	return n, nil
}

// read returns the file's bytes, nil for a missing file.
func read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcpconfig: reading %s: %w", path, err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("mcpconfig: reading %s: %w", path, err)
	}
	if buf.Len() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %w (over %d bytes); it was left as it is", path, ErrTooLarge, MaxFileBytes)
	}
	return buf.Bytes(), nil
}

// writeAtomic writes data to a temp file beside path and renames it over
// path, so Claude Code never reads a half-written config. The file keeps
// the mode of the file it replaces; a new one is 0600, since entries may
// carry secrets (claude-channel's broker token is an argument).
func writeAtomic(path string, data []byte) error {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	name := tmp.Name()
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(name)
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(name, path); err != nil {
		_ = os.Remove(name)
		return fmt.Errorf("mcpconfig: writing %s: %w", path, err)
	}
	return nil
}
