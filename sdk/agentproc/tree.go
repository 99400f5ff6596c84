package agentproc

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// TreeEnv is the environment variable that marks a process tree as owned:
// a space-separated list of tokens, one appended by each owner (the host for
// a plugin, Start for a runtime CLI). Children inherit their environment, so
// a process that left its owner's process group and session — an agent's
// shell tool started with setsid — still carries the tokens of every tree it
// belongs to, and KillMarked finds it by reading /proc/<pid>/environ. The
// name avoids KEY, SECRET and TOKEN, which runtimes (codex) strip from the
// environment of their tools.
const TreeEnv = "AVENOR_PROCTREE"

// NewTreeToken returns a fresh token for TreeEnv: 128 random bits, so that
// no process carries it unless it descends from the one it was given to.
func NewTreeToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "t" + hex.EncodeToString(b[:])
}

// WithTreeToken returns env (nil means none) with token appended to TreeEnv,
// keeping the tokens already there and dropping duplicate TreeEnv entries.
func WithTreeToken(env []string, token string) []string {
	out := make([]string, 0, len(env)+1)
	var tokens []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, TreeEnv+"="); ok {
			tokens = strings.Fields(v)
			continue
		}
		out = append(out, kv)
	}
	return append(out, TreeEnv+"="+strings.Join(append(tokens, token), " "))
}

// OwnTreeToken is the token this process was started with by its owner (the
// last one in TreeEnv), "" when none. A plugin kills the processes that carry
// it before it exits; earlier tokens belong to trees that also hold the
// plugin's parents and are not the plugin's to kill.
func OwnTreeToken(environ []string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], TreeEnv+"="); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return ""
			}
			return f[len(f)-1]
		}
	}
	return ""
}

// hasTreeToken says whether a raw /proc/<pid>/environ (NUL-separated)
// carries token in TreeEnv.
func hasTreeToken(environ []byte, token string) bool {
	if token == "" {
		return false
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, TreeEnv+"="); ok {
			for _, t := range strings.Fields(v) {
				if t == token {
					return true
				}
			}
		}
	}
	return false
}
