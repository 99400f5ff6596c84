package pi

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// listArgs ask pi for the models of the providers it holds a key for,
// without the network calls of its startup.
var listArgs = []string{"--list-models", "--offline"}

// noModels starts pi's answer when no provider has a key.
const noModels = "No models available"

var (
	providerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	modelName    = regexp.MustCompile(`^[^\s\p{Cc}]+$`)
)

// ParseListModels reads `pi --list-models`: a table whose header starts
// "provider model" and whose rows give a provider and a model id (--model
// takes provider/id), or noModels when no provider has a key. Lines before
// the header (a warning, say) and rows that do not read as names are
// skipped. none reports pi's "No models available".
func ParseListModels(out string) (models []runtime.Model, none bool) {
	header := false
	for _, line := range strings.Split(agentproc.StripANSI(out), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), noModels):
			none = true
		case len(f) >= 2 && f[0] == "provider" && f[1] == "model":
			header = true
		case header && len(f) >= 2 && providerName.MatchString(f[0]) && modelName.MatchString(f[1]):
			models = append(models, runtime.Model{ID: f[0] + "/" + f[1]})
		}
	}
	return models, none && len(models) == 0
}

// Catalog lists the models pi offers here (`pi --list-models`: those of
// the providers in its models.json and built in that hold a key) and reads
// auth from the same answer: a listed model means a provider with a key,
// "No models available" means none (pi says to log in).
func (backend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	bin := agentproc.ResolveBinary("pi", BinaryEnv, req.Options, req.Env)
	res, err := agentproc.RunStatus(ctx, bin, listArgs, agentproc.Environ(req.Env, nil))
	c := runtime.Catalog{ModelsSupported: true, Auth: runtime.AuthUnknown}
	switch {
	case err != nil:
		c.ModelsError = fmt.Sprintf("%s: %v", Name, err)
		return c.Bounded()
	case res.ExitCode != 0:
		c.ModelsError = fmt.Sprintf("%s: `pi --list-models` exited %d: %s", Name, res.ExitCode,
			runtime.Truncate(strings.TrimSpace(agentproc.StripANSI(string(res.Stderr))), 200))
		return c.Bounded()
	}
	models, none := ParseListModels(string(res.Stdout) + "\n" + string(res.Stderr))
	c.Models, c.ModelsTruncated = models, res.Truncated
	switch {
	case len(models) > 0:
		c.Auth, c.AuthMessage = runtime.AuthAuthenticated, fmt.Sprintf("pi lists %d model(s) of providers that hold a key", len(models))
	case none:
		c.Auth, c.AuthMessage = runtime.AuthRequired, "pi: "+noModels+"; log in to a provider (pi's /login) or set its API key"
	default:
		c.ModelsError = Name + ": cannot read `pi --list-models`'s answer"
	}
	return c.Bounded()
}
