package toproto

import (
	"sync"

	"github.com/avenor-go/avenor/sdk/jsonenc"
)

// Object encodes a JSON object, as json.Marshal does; nil encodes
// as nothing. It runs once per event a plugin emits, from any goroutine,
// so the encoders' scratch is pooled.
func Object(m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	e := encoders.Get().(*jsonenc.Encoder)
	defer encoders.Put(e)
	return e.AppendObject(make([]byte, 0, 256), m)
}

var encoders = sync.Pool{New: func() any { return new(jsonenc.Encoder) }}
