package scripted

import (
	"context"
	"os"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Models is the scripted backend's catalog (`avenor backends --models`): a
// fixed list, so that hosts and harnesses can test model discovery without
// a runtime. --model is not a scripted capability: these ids are listed,
// not selectable.
var Models = []runtime.Model{
	{ID: "scripted/fast", Name: "Scripted (fast)"},
	{ID: "scripted/thorough", Name: "Scripted (thorough)"},
}

// CatalogEnv names the variable that, in the plugin's environment, makes
// its catalog misbehave for tests: "fail" answers with a models error,
// "hang" answers only when the host gives up.
const CatalogEnv = "SCRIPTED_CATALOG"

// Catalog answers with Models, or as CatalogEnv says. Auth is left to
// Check: scripted has no runtime to ask.
func (backend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	mode := req.Env[CatalogEnv]
	if mode == "" {
		mode = os.Getenv(CatalogEnv)
	}
	switch mode {
	case "fail":
		return runtime.Catalog{ModelsSupported: true, ModelsError: "scripted catalog failed as " + CatalogEnv + "=fail asks"}
	case "hang":
		<-ctx.Done()
		return runtime.Catalog{ModelsSupported: true, ModelsError: "scripted catalog hung as " + CatalogEnv + "=hang asks"}
	}
	return runtime.Catalog{ModelsSupported: true, Models: append([]runtime.Model{}, Models...)}
}
