package control

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/sdk/jsonenc"
)

// MaxRequestLine bounds one request line (docs/control-protocol.md#transport-and-framing), newline excluded.
const MaxRequestLine = 4 << 20

// Request is one decoded JSON-RPC request.
type Request struct {
	// ID is the request's id exactly as sent (a string, a number or null);
	// nil when the request had no id: a notification, which gets no
	// response.
	ID json.RawMessage
	// Method is the method name, non-empty.
	Method string
	// Params is the params value as sent, nil when absent or null; when
	// present it is an object or an array.
	Params json.RawMessage
}

// DecodeRequest parses one request line. Bad input always gives an error
// object to answer with: -32700 for bytes that are not JSON, -32600 for JSON
// that is not a request. The returned Request carries the id when one could
// be read, so the error answers it; an error's id is otherwise null.
func DecodeRequest(line []byte) (Request, *Error) {
	var req Request
	if len(line) > MaxRequestLine {
		return req, newError(CodeInvalidRequest, MsgInvalidRequest, "request line exceeds 4 MiB")
	}
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		return req, &Error{Code: CodeParseError, Message: MsgParseError}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil || obj == nil {
		return req, newError(CodeInvalidRequest, MsgInvalidRequest, "a request is a JSON object")
	}
	if id, ok := obj["id"]; ok {
		if !validID(id) {
			return req, newError(CodeInvalidRequest, MsgInvalidRequest, "id must be a string, a number or null")
		}
		req.ID = id
	}
	var version string
	if raw, ok := obj["jsonrpc"]; !ok || json.Unmarshal(raw, &version) != nil || version != "2.0" {
		return req, newError(CodeInvalidRequest, MsgInvalidRequest, `jsonrpc must be "2.0"`)
	}
	if raw, ok := obj["method"]; !ok || json.Unmarshal(raw, &req.Method) != nil || req.Method == "" {
		return req, newError(CodeInvalidRequest, MsgInvalidRequest, "method must be a non-empty string")
	}
	if raw, ok := obj["params"]; ok && !bytes.Equal(raw, rawNull) {
		if raw[0] != '{' && raw[0] != '[' {
			return req, newError(CodeInvalidRequest, MsgInvalidRequest, "params must be an object")
		}
		req.Params = raw
	}
	return req, nil
}

// validID reports whether a raw id is a string, a number or null. raw is a
// valid JSON value without surrounding space.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	default:
		return bytes.Equal(raw, rawNull)
	}
}

// response is a success response line; errorResponse a failed one. Two
// types keep "result" present (even when null) and "error" absent, and the
// reverse, as JSON-RPC requires. sdk/jsonrpc.Message cannot write them:
// its omitempty id and result would drop "id":null and "result":null.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   *Error          `json:"error"`
}

// EncodeResult returns the response line (newline included) for a result.
func EncodeResult(id json.RawMessage, result any) ([]byte, error) {
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	if id == nil {
		id = rawNull
	}
	return appendNL(json.Marshal(response{JSONRPC: "2.0", ID: id, Result: raw}))
}

// EncodeError returns the error response line (newline included).
func EncodeError(id json.RawMessage, e *Error) []byte {
	if id == nil {
		id = rawNull
	}
	b, err := appendNL(json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: e}))
	if err != nil { // data that cannot be marshalled: send the error without it
		b, _ = appendNL(json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: &Error{Code: e.Code, Message: e.Message}}))
	}
	return b
}

// EncodeEvent returns the notification line for an event: params are the
// event's JSON exactly as its NDJSON line (sorted keys, HTML escaping).
func EncodeEvent(ev any) ([]byte, error) {
	return AppendEvent(nil, ev)
}

const eventPrefix = `{"jsonrpc":"2.0","method":"event","params":`

// AppendEvent appends EncodeEvent's line to dst; on error dst is returned
// as it was. An event map is encoded by jsonenc (the same bytes as
// json.Marshal, without its reflection: every subscriber encodes every
// event).
func AppendEvent(dst []byte, ev any) ([]byte, error) {
	var m map[string]any
	switch v := ev.(type) {
	case event.Event:
		m = v
	case map[string]any:
		m = v
	default:
		raw, err := json.Marshal(ev)
		if err != nil {
			return dst, err
		}
		dst = append(dst, eventPrefix...)
		dst = append(dst, raw...)
		return append(dst, '}', '\n'), nil
	}
	e := encoders.Get().(*jsonenc.Encoder)
	defer encoders.Put(e)
	n := len(dst)
	out, err := e.AppendObject(append(dst, eventPrefix...), m)
	if err != nil {
		return dst[:n], err
	}
	return append(out, '}', '\n'), nil
}

// appendEventLine is AppendEvent for an event given as its line as the
// writer encoded it (the same bytes AppendEvent would write for it).
func appendEventLine(dst, line []byte) []byte {
	dst = append(dst, eventPrefix...)
	dst = append(dst, line...)
	return append(dst, '}', '\n')
}

// encoders pools the encoders' scratch: forwarders encode concurrently.
var encoders = sync.Pool{New: func() any { return new(jsonenc.Encoder) }}

func appendNL(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
