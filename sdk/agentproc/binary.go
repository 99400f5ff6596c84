package agentproc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// BinaryOption is the backend option ([backends.<name>].options) that names
// the runtime CLI to run instead of the one found in PATH.
const BinaryOption = "binary"

// versionTimeout bounds `<binary> --version` (Version, Check).
const versionTimeout = 15 * time.Second

// ResolveBinary is the runtime CLI to run: the "binary" option, else envKey
// in the request's environment, else envKey in the plugin's, else def.
func ResolveBinary(def, envKey string, options map[string]any, env map[string]string) string {
	if v, ok := options[BinaryOption].(string); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	if envKey != "" {
		if v := env[envKey]; v != "" {
			return v
		}
		if v := os.Getenv(envKey); v != "" {
			return v
		}
	}
	return def
}

// Environ is the runtime's environment: the plugin's, then defaults for
// keys that are unset, then extra (the backend's configured env), which
// always wins.
func Environ(extra, defaults map[string]string) []string {
	env := map[string]string{}
	var order []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	set := func(m map[string]string, override bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := env[k]; ok && !override {
				continue
			}
			if _, ok := env[k]; !ok {
				order = append(order, k)
			}
			env[k] = m[k]
		}
	}
	set(defaults, false)
	set(extra, true)
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Lookup returns a key of an environment list ("" when unset).
func Lookup(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// Check says whether a runtime CLI is usable: found, and answering
// `--version` within a bound. It starts no session, so authentication is
// "unknown".
func Check(ctx context.Context, backend, binary string, env []string, installHint string) runtime.Readiness {
	r := runtime.Readiness{Binary: binary, Auth: "unknown"}
	path, said, err := Version(ctx, backend, binary, env, installHint)
	if path != "" {
		r.Binary = path
	}
	if err != nil {
		r.Message = err.Error()
		return r
	}
	r.Version = firstLine(said)
	r.Ready = true
	r.Message = fmt.Sprintf("%s %s found; authentication is checked when a session starts", binary, r.Version)
	return r
}

// Version finds binary in PATH (or at its path) and runs `binary
// --version` with env, within a bound: path is where it was found, said
// what it printed (stdout and stderr). A binary not found, or whose
// --version fails, is a runtime fault whose message starts with backend
// and says how to fix it (installHint).
func Version(ctx context.Context, backend, binary string, env []string, installHint string) (path, said string, err error) {
	path, err = exec.LookPath(binary)
	if err != nil {
		return "", "", runtime.Errorf(runtime.FaultRuntime, "%s: the runtime CLI %q was not found %s; %s", backend, binary, searched(binary), installHint)
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = env
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return path, "", runtime.Errorf(runtime.FaultRuntime, "%s: `%s --version` failed: %v: %s", backend, path, err, runtime.Truncate(strings.TrimSpace(out.String()), 300))
	}
	return path, out.String(), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return runtime.Truncate(s, 200)
}

// searched says where a binary name was looked for.
func searched(path string) string {
	if strings.Contains(path, "/") {
		return "at that path"
	}
	return "in PATH"
}
