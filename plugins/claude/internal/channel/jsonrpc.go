package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/avenor-go/avenor/sdk/jsonrpc"
)

// MCP's stdio transport is newline-delimited JSON-RPC 2.0: one message (or,
// in protocol 2024-11-05, one batch array) per line, no embedded newlines.

// JSON-RPC error codes, messages and errors are sdk/jsonrpc's; only the
// framing (a batch array per line, answered as one) is MCP's own here.
const (
	codeParseError     = jsonrpc.CodeParseError
	codeInvalidRequest = jsonrpc.CodeInvalidRequest
	codeMethodNotFound = jsonrpc.CodeMethodNotFound
	codeInvalidParams  = jsonrpc.CodeInvalidParams
)

// rpcMessage is any JSON-RPC message: a request (ID and Method), a
// notification (Method only) or a response (ID and Result or Error).
type rpcMessage = jsonrpc.Message

type rpcError = jsonrpc.RPCError

func isRequest(m rpcMessage) bool      { return m.Method != "" && len(m.ID) > 0 }
func isNotification(m rpcMessage) bool { return m.Method != "" && len(m.ID) == 0 }

var errNotJSONRPC = errors.New(`not a JSON-RPC 2.0 message (want an object with "jsonrpc":"2.0")`)

// parseFrame parses one line: a message, or a batch of them. A batch is
// reported so the answers can go back as one array.
func parseFrame(line []byte) (msgs []rpcMessage, batch bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false, nil
	}
	if line[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(line, &raws); err != nil {
			return nil, true, fmt.Errorf("parse error: %w", err)
		}
		if len(raws) == 0 {
			return nil, true, errors.New("empty batch")
		}
		for _, r := range raws {
			m, err := parseMessage(r)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, m)
		}
		return msgs, true, nil
	}
	m, err := parseMessage(line)
	if err != nil {
		return nil, false, err
	}
	return []rpcMessage{m}, false, nil
}

func parseMessage(data []byte) (rpcMessage, error) {
	var m rpcMessage
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return m, errNotJSONRPC
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("parse error: %w", err)
	}
	if m.JSONRPC != "2.0" {
		return m, errNotJSONRPC
	}
	if bytes.Equal(bytes.TrimSpace(m.ID), []byte("null")) {
		m.ID = nil
	}
	if m.Method == "" && len(m.ID) == 0 {
		return m, errors.New("neither a request, a notification nor a response")
	}
	return m, nil
}
