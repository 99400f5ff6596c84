package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Message is one JSON-RPC 2.0 message in either direction: a request
// (Method and ID), a notification (Method, no ID), or a response (ID with
// Result or Error).
//
// ID is kept raw: agents number their own requests from 0 and some use UUID
// strings, so 0 must never mean "no id". An absent id is nil; "id":null is
// the bytes null.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// HasID reports whether the message carries an id (null included).
func (m *Message) HasID() bool { return m.ID != nil }

// IsResponse reports whether the message answers a request.
func (m *Message) IsResponse() bool { return m.Method == "" && m.ID != nil }

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 && !bytes.Equal(e.Data, []byte("null")) {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, runtime.Truncate(string(e.Data), 300))
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// Error codes of JSON-RPC 2.0, and $/cancel_request's (runtime-protocols.md §1.10).
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
)

// MethodNotFound is the answer to a peer→client method avenor does not serve.
func MethodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: fmt.Sprintf("method %q not implemented by avenor", method)}
}

// idKey is a canonical form of a JSON-RPC id, so that the id of a response
// finds its request whatever whitespace or number spelling the peer used:
// strings keep their value (prefixed, so "1" and 1 differ), numbers are
// normalised.
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	case 'n':
		return "null"
	default:
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			if i, err := n.Int64(); err == nil {
				return "n:" + strconv.FormatInt(i, 10)
			}
			if f, err := n.Float64(); err == nil {
				return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
	}
	return "raw:" + string(raw)
}

// IDString is an id as avenor shows it (a permission's request_id): a
// string id's value, a number's digits.
func IDString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
