package event

import "github.com/avenor-go/avenor/sdk/jsonenc"

// The contract's line encoding (docs/events.md#the-envelope) is what json.Encoder.Encode writes for
// the event map with its defaults: keys sorted, <, > and & escaped, and a
// trailing newline. encoding/json gets there through reflection and a sorted
// copy of every map's keys, which was the largest cost of a flood (issue
// 11); jsonenc writes the same bytes directly. The old encoder stays in the
// tests as the oracle (encode_test.go, FuzzLineEncoder).

// lineEncoder appends events as NDJSON lines. Not safe for concurrent use
// (the Writer holds mu).
type lineEncoder struct{ enc jsonenc.Encoder }

// appendLine appends ev's line, newline included, to dst. On error the
// caller discards what was appended.
func (e *lineEncoder) appendLine(dst []byte, ev Event) ([]byte, error) {
	dst, err := e.enc.AppendObject(dst, ev)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}
