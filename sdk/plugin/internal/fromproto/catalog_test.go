package fromproto

import (
	"fmt"
	"testing"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestCatalogBoundsWhatAPluginSends: the host reads a plugin's catalog
// within the catalog's bounds, whatever the plugin sent.
func TestCatalogBoundsWhatAPluginSends(t *testing.T) {
	r := &pb.CatalogResponse{ModelsSupported: true, Auth: "logged-in-ish"}
	for i := range runtime.MaxModels + 50 {
		r.Models = append(r.Models, &pb.Model{Id: fmt.Sprintf("p/m%d", i)})
	}
	c := Catalog(r)
	if len(c.Models) != runtime.MaxModels || !c.ModelsTruncated || c.Auth != runtime.AuthUnknown {
		t.Errorf("%d models, truncated %v, auth %q", len(c.Models), c.ModelsTruncated, c.Auth)
	}
	if c := Catalog(&pb.CatalogResponse{Models: r.Models[:3], ModelsError: "x"}); len(c.Models) != 0 || c.ModelsError != "" {
		t.Errorf("an unsupported catalog kept %+v", c)
	}
}
