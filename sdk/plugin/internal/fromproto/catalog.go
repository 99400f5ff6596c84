package fromproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// CatalogRequest reads a request for a backend's models and auth state.
func CatalogRequest(r *pb.CatalogRequest) (runtime.CheckRequest, error) {
	req := runtime.CheckRequest{Backend: r.GetBackend(), Env: r.GetEnv()}
	opts, err := Object(r.GetOptionsJson())
	if err != nil {
		return req, err
	}
	req.Options = opts
	return req, nil
}

// Catalog reads the answer to Catalog, within the catalog's bounds: the
// plugin is outside input.
func Catalog(r *pb.CatalogResponse) runtime.Catalog {
	c := runtime.Catalog{
		ModelsSupported: r.GetModelsSupported(), ModelsTruncated: r.GetModelsTruncated(),
		ModelsError: r.GetModelsError(), Auth: runtime.AuthState(r.GetAuth()), AuthMessage: r.GetAuthMessage(),
	}
	for i, m := range r.GetModels() {
		if i > runtime.MaxModels {
			c.ModelsTruncated = true
			break
		}
		c.Models = append(c.Models, runtime.Model{ID: m.GetId(), Name: m.GetName()})
	}
	return c.Bounded()
}
