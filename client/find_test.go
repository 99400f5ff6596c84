package client

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/avenor-go/avenor/host/control"
)

// TestFindRuntimeAsksByID: a runtime id that a supervisor's list leaves out
// (a fleet socket lists every node, and leaves out one that did not answer
// in time) is found by asking for it by id; a name nobody holds is still
// NoRuntimeError.
func TestFindRuntimeAsksByID(t *testing.T) {
	s := control.NewServer(control.Config{Path: filepath.Join(t.TempDir(), "f.sock")})
	s.Handle("list", control.Method{Handler: func(context.Context, *control.Call) (any, error) {
		return []any{}, nil
	}})
	s.Handle("status", control.Method{Handler: func(_ context.Context, c *control.Call) (any, error) {
		var p struct {
			RuntimeID string `json:"runtime_id"`
		}
		if err := c.Decode(&p); err != nil {
			return nil, err
		}
		if p.RuntimeID != "n1/rt_2" {
			return nil, &control.Error{Code: -32000, Message: "runtime not found"}
		}
		return map[string]any{"runtime_id": "n1/rt_2", "run_id": "r2", "status": "running"}, nil
	}})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	c, rt, err := FindRuntime(ctx, []string{s.Path()}, "n1/rt_2", nil)
	if err != nil || rt.RuntimeID != "n1/rt_2" || rt.RunID != "r2" {
		t.Fatalf("FindRuntime(n1/rt_2) = %+v, %v; want the runtime asked for by id", rt, err)
	}
	c.Close()
	_, _, err = FindRuntime(ctx, []string{s.Path()}, "n1/rt_9", nil)
	var nr *NoRuntimeError
	if !errors.As(err, &nr) || nr.Name != "n1/rt_9" {
		t.Fatalf("FindRuntime(n1/rt_9) = %v, want NoRuntimeError", err)
	}
}
