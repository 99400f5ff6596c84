// Command mcpprobe is a minimal MCP server over stdio (newline-delimited
// JSON-RPC) for the launch-context e2e tests: it offers one tool,
// avenor_probe, and appends the text of every call to the file named by
// PROBE_OUT, so a test sees that a call reached it and that the env the
// --mcp-config gave it arrived.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 || m.Method == "" {
			continue // notifications and answers need no reply
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.ProtocolVersion == "" {
				p.ProtocolVersion = "2025-06-18"
			}
			reply["result"] = map[string]any{"protocolVersion": p.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo":   map[string]any{"name": "probe", "version": "1.0.0"}}
		case "tools/list":
			reply["result"] = map[string]any{"tools": []any{map[string]any{
				"name": "avenor_probe", "description": "Records that it was called.",
				"inputSchema": map[string]any{"type": "object",
					"properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
			}}}
		case "tools/call":
			var p struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if path := os.Getenv("PROBE_OUT"); path != "" {
				if f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintln(f, p.Arguments.Text)
					f.Close()
				}
			}
			reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "probe ok"}}}
		case "ping":
			reply["result"] = map[string]any{}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found: " + m.Method}
		}
		_ = out.Encode(reply)
	}
}
