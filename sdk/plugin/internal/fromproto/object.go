package fromproto

import (
	"encoding/json"
	"fmt"
)

// Object decodes a JSON object; empty input is a nil map. Numbers
// stay float64, as the contract's passthrough fields require.
func Object(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}
