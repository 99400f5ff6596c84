package acp

import "github.com/avenor-go/avenor/sdk/jsonrpc"

// The JSON-RPC 2.0 layer ACP runs on is sdk/jsonrpc; these names keep the
// ACP client's vocabulary.
type (
	Conn        = jsonrpc.Conn
	ConnOptions = jsonrpc.ConnOptions
	Handler     = jsonrpc.Handler
	Call        = jsonrpc.Call
	Message     = jsonrpc.Message
	RPCError    = jsonrpc.RPCError
	FrameError  = jsonrpc.FrameError
	LineSource  = jsonrpc.LineSource
	Stats       = jsonrpc.Stats
	Decoder     = jsonrpc.Decoder
)

// Error codes of JSON-RPC 2.0 and of ACP (runtime-protocols.md §1.10).
const (
	CodeParseError       = jsonrpc.CodeParseError
	CodeInvalidRequest   = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound   = jsonrpc.CodeMethodNotFound
	CodeInvalidParams    = jsonrpc.CodeInvalidParams
	CodeInternalError    = jsonrpc.CodeInternalError
	CodeRequestCancelled = jsonrpc.CodeRequestCancelled
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)

// Functions of sdk/jsonrpc under their ACP names.
var (
	NewConn        = jsonrpc.NewConn
	NewDecoder     = jsonrpc.NewDecoder
	ProcessLines   = jsonrpc.ProcessLines
	MethodNotFound = jsonrpc.MethodNotFound
	RequestID      = jsonrpc.RequestID
	IDString       = jsonrpc.IDString
)
