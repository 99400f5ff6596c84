package stable

import (
	"errors"
	"testing"

	"github.com/avenor-go/avenor/host/control"
)

// TestUnknownRuntimeIsServerError: an unknown runtime_id is the method's
// lookup failing, -32000 with the original's text, and
// still ErrUnknownRuntime for errors.Is (the HTTP debug adapter's 404).
func TestUnknownRuntimeIsServerError(t *testing.T) {
	err := unknownRuntime("rt_9")
	var ce *control.Error
	if !errors.As(err, &ce) || ce.Code != control.CodeServerError || ce.Message != `runtime "rt_9" not found` {
		t.Fatalf("unknownRuntime: %#v", ce)
	}
	if !errors.Is(err, ErrUnknownRuntime) || err.Error() != `runtime "rt_9" not found` {
		t.Fatalf("unknownRuntime: %v", err)
	}
}
