package occatalog

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// cacheFor is how long one answer serves both backends of the plugin.
const cacheFor = 30 * time.Second

// modelID is one line of `opencode models`: provider/model, no spaces.
var modelID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@:+-]*/[^\s\p{Cc}]+$`)

// ParseModels reads `opencode models`: one provider/model id a line, in
// OpenCode's order; any other line (a log line, a banner) is skipped.
func ParseModels(out string) []runtime.Model {
	var models []runtime.Model
	for _, line := range strings.Split(agentproc.StripANSI(out), "\n") {
		line = strings.TrimSpace(line)
		if modelID.MatchString(line) {
			models = append(models, runtime.Model{ID: line})
		}
	}
	return models
}

// counted matches the totals `opencode auth list` prints under each of its
// two sections: "N credentials" and "N environment variable(s)".
var counted = regexp.MustCompile(`(?m)^\W*(\d+) (credentials?|environment variables?)\s*$`)

// ParseAuthList reads `opencode auth list`: authenticated when it counts a
// stored credential or a provider key in the environment; unknown
// otherwise, since a key written in opencode.json is not among what it
// counts; ok false when neither total is there to read.
func ParseAuthList(out string) (state runtime.AuthState, msg string, ok bool) {
	creds, envs, found := 0, 0, false
	for _, m := range counted.FindAllStringSubmatch(agentproc.StripANSI(out), -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 1<<20 {
			continue
		}
		found = true
		if strings.HasPrefix(m[2], "credential") {
			creds += n
		} else {
			envs += n
		}
	}
	if !found {
		return runtime.AuthUnknown, "", false
	}
	if creds+envs > 0 {
		return runtime.AuthAuthenticated, fmt.Sprintf("`opencode auth list`: %d stored credential(s), %d provider key(s) in the environment", creds, envs), true
	}
	return runtime.AuthUnknown, "`opencode auth list` counts no stored credential or provider key in the environment; a provider key in opencode.json is not among what it counts", true
}

// Lister runs and remembers the two commands for one plugin process.
type Lister struct {
	mu     sync.Mutex
	key    string
	at     time.Time
	answer runtime.Catalog
}

// Catalog is the catalog of the opencode binary bin run with env: `opencode
// models` and `opencode auth list`, one after the other, each bounded.
func (l *Lister) Catalog(ctx context.Context, bin string, env []string) runtime.Catalog {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := bin + "\x00" + strings.Join(env, "\x00")
	if l.key == key && time.Since(l.at) < cacheFor {
		return l.answer
	}
	// One after the other: on a fresh data directory both commands set
	// opencode's state up, and side by side one of them could fail doing
	// it (`opencode models` exited 1 in make e2e on a loaded machine).
	models, modelsErr := agentproc.RunStatus(ctx, bin, []string{"models", "--pure"}, env)
	auth, authErr := agentproc.RunStatus(ctx, bin, []string{"auth", "list", "--pure"}, env)
	c := runtime.Catalog{ModelsSupported: true, Auth: runtime.AuthUnknown}
	switch {
	case modelsErr != nil:
		c.ModelsError = modelsErr.Error()
	case models.ExitCode != 0:
		c.ModelsError = fmt.Sprintf("`opencode models` exited %d: %s", models.ExitCode, lastLine(models.Stderr, models.Stdout))
	default:
		c.Models = ParseModels(string(models.Stdout))
		c.ModelsTruncated = models.Truncated
	}
	switch {
	case authErr != nil:
		c.AuthMessage = authErr.Error()
	case auth.ExitCode != 0:
		c.AuthMessage = fmt.Sprintf("`opencode auth list` exited %d", auth.ExitCode)
	default:
		var ok bool
		if c.Auth, c.AuthMessage, ok = ParseAuthList(string(auth.Stdout) + "\n" + string(auth.Stderr)); !ok {
			c.AuthMessage = "cannot read `opencode auth list`'s answer"
		}
	}
	c = c.Bounded()
	if ctx.Err() == nil {
		l.key, l.at, l.answer = key, time.Now(), c
	}
	return c
}

// lastLine is the last non-empty line of the first output that has one.
func lastLine(outs ...[]byte) string {
	for _, o := range outs {
		lines := strings.Split(strings.TrimSpace(agentproc.StripANSI(string(o))), "\n")
		if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
			return l
		}
	}
	return "no output"
}
