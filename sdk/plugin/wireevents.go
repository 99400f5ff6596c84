package plugin

import (
	"unicode/utf8"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The host's end of a session stream reads an Events batch — nearly every
// message of a busy stream — without decoding it into messages: one copy of
// the received bytes per batch, each event's type and JSON sliced from it,
// instead of an Event message, a string and a byte slice per event (issue
// 25). Every other message is decoded as before.

// Field numbers of the messages wireEvents reads (runtime.proto).
const (
	pluginMessageEvents = 2 // PluginMessage.events
	eventsEvents        = 1 // Events.events
	eventType           = 1 // Event.type
	eventJSON           = 2 // Event.json
)

// maxInternedTypes bounds the event type names one receive loop keeps, so
// that a plugin sending ever new names cannot grow it without end.
const maxInternedTypes = 256

// rawPluginMessage receives a PluginMessage as it crossed the wire
// (recvCodec): its bytes, the loop's own.
type rawPluginMessage struct{ b []byte }

// recvCodec is the proto codec, except that it hands a rawPluginMessage the
// message's bytes undecoded. The wire is the same: the plugin's side is
// unchanged.
type recvCodec struct{ encoding.CodecV2 }

func newRecvCodec() recvCodec { return recvCodec{encoding.GetCodecV2(proto.Name)} }

func (c recvCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*rawPluginMessage); ok {
		r.b = data.Materialize()
		return nil
	}
	return c.CodecV2.Unmarshal(data, v)
}

// wireEvent is one event of an Events batch, its JSON a slice of the
// received message.
type wireEvent struct {
	typ  runtime.EventType
	json []byte
}

// wireEvents returns the events of b when b is a PluginMessage holding an
// Events batch and nothing else, appended to out; ok is false for any other
// message, or one the proto decoder would refuse or read differently (a
// type that is not UTF-8), which the caller decodes as a message. names
// interns the type names.
func wireEvents(b []byte, out []wireEvent, names map[string]runtime.EventType) ([]wireEvent, bool) {
	num, typ, n := consumeTag(b)
	if n < 0 || num != pluginMessageEvents || typ != protowire.BytesType {
		return nil, false
	}
	body, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return nil, false
	}
	for len(body) > 0 {
		num, typ, n := consumeTag(body)
		if n < 0 {
			return nil, false
		}
		body = body[n:]
		if num != eventsEvents || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, body); n < 0 {
				return nil, false
			}
			body = body[n:]
			continue
		}
		msg, m := protowire.ConsumeBytes(body)
		if m < 0 {
			return nil, false
		}
		body = body[m:]
		ev, ok := readWireEvent(msg, names)
		if !ok {
			return nil, false
		}
		out = append(out, ev)
	}
	return out, true
}

// readWireEvent reads one Event message; a field given twice keeps its
// last value, as the proto decoder does.
func readWireEvent(b []byte, names map[string]runtime.EventType) (wireEvent, bool) {
	var typeBytes, js []byte
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return wireEvent{}, false
		}
		b = b[n:]
		if (num == eventType || num == eventJSON) && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return wireEvent{}, false
			}
			b = b[m:]
			if num == eventType {
				typeBytes = v
			} else {
				js = v
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return wireEvent{}, false
		}
		b = b[n:]
	}
	if !utf8.Valid(typeBytes) {
		return wireEvent{}, false
	}
	name, ok := names[string(typeBytes)]
	if !ok {
		name = runtime.EventType(typeBytes)
		if len(names) < maxInternedTypes {
			names[string(name)] = name
		}
	}
	return wireEvent{typ: name, json: js}, true
}

// consumeTag is protowire.ConsumeTag refusing the field numbers past
// protowire.MaxValidNumber that the proto decoder refuses too.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	num, typ, n := protowire.ConsumeTag(b)
	if n >= 0 && !num.IsValid() {
		return 0, 0, -1
	}
	return num, typ, n
}
