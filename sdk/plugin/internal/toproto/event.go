package toproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Event is one event, its fields encoded as a JSON object.
func Event(ev runtime.Event) (EncodedEvent, error) {
	data, err := Object(ev.Fields)
	if err != nil {
		return EncodedEvent{}, fmt.Errorf("event %q: %w", ev.Type, err)
	}
	return EncodedEvent{&pb.Event{Type: string(ev.Type), Json: data}}, nil
}
