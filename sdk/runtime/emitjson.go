package runtime

import (
	"encoding/json"
	"fmt"

	"github.com/avenor-go/avenor/sdk/jsonenc"
)

// JSONEmitter is an optional Host extension for plugins that already hold
// an event's fields encoded (a native frame passed through, a chunk
// written straight to bytes): EmitJSON records the event as Emit does,
// without building a map for it. fields is the flat JSON object of the
// event without the stamped fields, as Event.Fields would encode; empty
// means no fields. The Host takes fields over: the caller must not change
// it afterwards.
//
// The host writes the bytes to its log as they are when they are in
// canonical form — what encoding/json writes: no whitespace, keys sorted,
// <, > and & escaped, numbers as float64 prints them (AppendMessageChunkJSON
// and sdk/jsonenc write it) — and decodes and re-encodes them otherwise,
// so the log is the same either way; canonical bytes are just cheaper.
// Both the sdk/plugin session and the host implement it; use EmitJSON to
// fall back to Emit for a Host that does not.
type JSONEmitter interface {
	EmitJSON(typ EventType, fields []byte)
}

// EmitJSON hands h an event whose fields are already encoded: through
// JSONEmitter when h has it, else decoded into a map for Emit. It returns
// an error, and emits nothing, when fields is not a JSON object (a Host
// with JSONEmitter reports that itself: the host drops a malformed event
// and logs it).
func EmitJSON(h Host, typ EventType, fields []byte) error {
	if je, ok := h.(JSONEmitter); ok {
		je.EmitJSON(typ, fields)
		return nil
	}
	var m map[string]any
	if len(fields) > 0 {
		if err := json.Unmarshal(fields, &m); err != nil {
			return fmt.Errorf("event %q: fields are not a JSON object: %w", typ, err)
		}
	}
	h.Emit(NewEvent(typ, m))
	return nil
}

// AppendMessageChunkJSON appends the fields of MessageChunk(sessionID,
// text) encoded, byte for byte what encoding the map gives, for
// EmitJSON(h, EventMessageChunk, …): a chunk without a map.
func AppendMessageChunkJSON(dst []byte, sessionID, text string) []byte {
	return appendChunkJSON(dst, "agent_message_chunk", sessionID, text)
}

// AppendThoughtChunkJSON is AppendMessageChunkJSON for ThoughtChunk.
func AppendThoughtChunkJSON(dst []byte, sessionID, text string) []byte {
	return appendChunkJSON(dst, "agent_thought_chunk", sessionID, text)
}

func appendChunkJSON(dst []byte, update, sessionID, text string) []byte {
	dst = append(dst, `{"content":{"text":`...)
	dst = jsonenc.AppendString(dst, text)
	dst = append(dst, `,"type":"text"}`...)
	if sessionID != "" {
		dst = append(dst, `,"session_id":`...)
		dst = jsonenc.AppendString(dst, sessionID)
	}
	dst = append(dst, `,"session_update":`...)
	dst = jsonenc.AppendString(dst, update)
	return append(dst, '}')
}
