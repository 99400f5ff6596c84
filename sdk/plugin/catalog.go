package plugin

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Catalog asks the plugin for the backend's models and auth state (the
// Catalog RPC). It never fails: a plugin built before the RPC, or a backend
// that does not implement runtime.Cataloger, answers "does not list models,
// auth not probed"; a plugin that fails or misses ctx's deadline answers
// with ModelsError set, so the backend stays listed as Check left it.
func (b *remoteBackend) Catalog(ctx context.Context, req runtime.CheckRequest) runtime.Catalog {
	creq, err := toproto.CatalogRequest(b.info.Name, req)
	if err != nil {
		return runtime.Catalog{ModelsError: "options: " + err.Error()}
	}
	resp, err := b.client.Catalog(ctx, creq)
	if err == nil {
		return fromproto.Catalog(resp)
	}
	if status.Code(err) == codes.Unimplemented {
		return runtime.Catalog{}
	}
	// The list was asked for and failed: say why, whatever the backend
	// declared.
	c := runtime.Catalog{ModelsSupported: true}
	if ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
		c.ModelsError = "the plugin did not answer within the catalog's time limit"
	} else {
		c.ModelsError = b.owner.describeErr("catalog", err).Error()
	}
	return c.Bounded()
}

// Catalog serves the Catalog RPC: the backend's own answer when it is a
// runtime.Cataloger, within the catalog's bounds; otherwise "does not list
// models, auth not probed".
func (rs runtimeService) Catalog(ctx context.Context, r *pb.CatalogRequest) (*pb.CatalogResponse, error) {
	s := rs.server
	req, optsErr := fromproto.CatalogRequest(r)
	b, ok := s.backends[req.Backend]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "plugin %s does not serve backend %q", s.info.Name, req.Backend)
	}
	if optsErr != nil {
		return nil, status.Errorf(codes.InvalidArgument, "options: %v", optsErr)
	}
	cat, ok := b.(runtime.Cataloger)
	if !ok {
		return toproto.Catalog(runtime.Catalog{}), nil
	}
	return toproto.Catalog(cat.Catalog(ctx, req).Bounded()), nil
}
