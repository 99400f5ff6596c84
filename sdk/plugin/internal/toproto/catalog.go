package toproto

import (
	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// CatalogRequest asks a backend for its models and auth state.
func CatalogRequest(backend string, req runtime.CheckRequest) (*pb.CatalogRequest, error) {
	opts, err := Object(req.Options)
	if err != nil {
		return nil, err
	}
	return &pb.CatalogRequest{Backend: backend, Env: req.Env, OptionsJson: opts}, nil
}

// Catalog is the answer to Catalog.
func Catalog(c runtime.Catalog) *pb.CatalogResponse {
	models := make([]*pb.Model, 0, len(c.Models))
	for _, m := range c.Models {
		models = append(models, &pb.Model{Id: m.ID, Name: m.Name})
	}
	return &pb.CatalogResponse{
		ModelsSupported: c.ModelsSupported, Models: models, ModelsTruncated: c.ModelsTruncated,
		ModelsError: c.ModelsError, Auth: string(c.Auth), AuthMessage: c.AuthMessage,
	}
}
