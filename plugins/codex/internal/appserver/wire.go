package appserver

import (
	"bytes"
	"io"
	"time"
)

// jsonrpcPrefix is how sdk/acp's encoder starts every message it writes:
// the "jsonrpc" field comes first in its Message struct.
var jsonrpcPrefix = []byte(`{"jsonrpc":"2.0",`)

// noVersionWriter drops the "jsonrpc" field from each message the acp
// connection writes: Codex's app-server speaks JSON-RPC without it
// (runtime-protocols.md §3.1). sdk/acp's Conn gives us ordered dispatch,
// request ids and server-request handling, and it writes each message with
// exactly one Write call, so a prefix rewrite per Write is enough.
type noVersionWriter struct{ w io.Writer }

func (n noVersionWriter) Write(b []byte) (int, error) {
	if !bytes.HasPrefix(b, jsonrpcPrefix) {
		return n.w.Write(b)
	}
	out := make([]byte, 0, len(b)-len(jsonrpcPrefix)+1)
	out = append(out, '{')
	out = append(out, b[len(jsonrpcPrefix):]...)
	if _, err := n.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// SetWriteDeadline passes the connection's write timeout to the pipe.
func (n noVersionWriter) SetWriteDeadline(t time.Time) error {
	if d, ok := n.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline(t)
	}
	return nil
}
