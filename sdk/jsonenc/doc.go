// Package jsonenc encodes JSON objects byte for byte as encoding/json does
// (json.Marshal, and json.Encoder with its defaults): map keys sorted, <, >
// and & escaped, U+2028 and U+2029 escaped, invalid UTF-8 replaced by
// \ufffd, floats in ES6 form. It writes the types an event holds itself —
// what json.Unmarshal produces into an any, plus Go's integer types,
// float32, []string and map[string]string — and hands every other value to
// json.Marshal, so the bytes and the errors are always encoding/json's.
//
// It exists for the event path: reflection and a sorted copy of
// every map's keys made encoding/json the largest cost of an event flood,
// once in the plugin (each event's fields) and once in the host (each NDJSON
// line, whose exact bytes the contract pins, docs/events.md#the-envelope). Imported by sdk/plugin,
// sdk/runtime (the chunk helpers of EmitJSON), host/event and
// host/control; it depends on the standard library only. The reading
// rules that the host's event scanner and the plugin's decoder must agree
// on live here too: Hex4, Unescape and ScanNumber.
package jsonenc
