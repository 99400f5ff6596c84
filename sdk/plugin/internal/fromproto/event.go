package fromproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Event decodes with d, the receiving session's decoder (the hot
// path of a flood: see ObjectDecoder).
func Event(e *pb.Event, d *ObjectDecoder) (runtime.Event, error) {
	fields, err := d.Decode(e.GetJson())
	if err != nil {
		return runtime.Event{}, fmt.Errorf("event %q: not a JSON object: %w", e.GetType(), err)
	}
	if fields == nil {
		fields = map[string]any{}
	}
	return runtime.Event{Type: runtime.EventType(e.GetType()), Fields: fields}, nil
}
