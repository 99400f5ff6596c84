package ochttp

import "encoding/json"

// Wire types of the OpenCode server: only the fields the backend reads.

type modelRef struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// frame is one SSE event: {type, properties}.
type frame struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

type apiError struct {
	Name string `json:"name"`
	Data struct {
		Message string `json:"message"`
	} `json:"data"`
}

func (e *apiError) String() string {
	if e == nil {
		return ""
	}
	if e.Data.Message != "" {
		return e.Name + ": " + e.Data.Message
	}
	return e.Name
}

type tokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

type messageInfo struct {
	ID        string    `json:"id"`
	SessionID string    `json:"sessionID"`
	Role      string    `json:"role"`
	Finish    string    `json:"finish"`
	Error     *apiError `json:"error"`
	Tokens    *tokens   `json:"tokens"`
}

type toolState struct {
	Status string          `json:"status"`
	Input  json.RawMessage `json:"input"`
	Output string          `json:"output"`
	Error  string          `json:"error"`
	Title  string          `json:"title"`
}

type part struct {
	ID        string     `json:"id"`
	SessionID string     `json:"sessionID"`
	MessageID string     `json:"messageID"`
	Type      string     `json:"type"`
	Text      string     `json:"text"`
	Synthetic bool       `json:"synthetic"`
	CallID    string     `json:"callID"`
	Tool      string     `json:"tool"`
	State     *toolState `json:"state"`
}

type message struct {
	Info  messageInfo `json:"info"`
	Parts []part      `json:"parts"`
}

// properties is the union of the properties the backend reads.
type properties struct {
	SessionID string                 `json:"sessionID"`
	Info      *messageInfo           `json:"info"`
	Part      *part                  `json:"part"`
	MessageID string                 `json:"messageID"`
	PartID    string                 `json:"partID"`
	Field     string                 `json:"field"`
	Delta     string                 `json:"delta"`
	Status    *struct{ Type string } `json:"status"`
	Error     *apiError              `json:"error"`
	// permission.asked
	ID         string          `json:"id"`
	Permission string          `json:"permission"`
	Patterns   []string        `json:"patterns"`
	Metadata   json.RawMessage `json:"metadata"`
	Always     []string        `json:"always"`
	Tool       *struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	} `json:"tool"`
}

// sessionOf is the session an event belongs to, wherever it says so.
func (p *properties) sessionOf() string {
	switch {
	case p.SessionID != "":
		return p.SessionID
	case p.Part != nil && p.Part.SessionID != "":
		return p.Part.SessionID
	case p.Info != nil && p.Info.SessionID != "":
		return p.Info.SessionID
	}
	return ""
}

// knownTypes are the event types the backend recognises; the rest are
// counted as unknown_frames (protocol drift). Types with a known prefix
// (tui.*, pty.*, …) are noise for avenor but not drift.
var knownTypes = map[string]bool{
	"server.connected": true, "server.heartbeat": true, "server.instance.disposed": true,
	"session.created": true, "session.updated": true, "session.deleted": true,
	"session.status": true, "session.idle": true, "session.error": true,
	"session.diff": true, "session.compacted": true,
	"message.updated": true, "message.removed": true,
	"message.part.updated": true, "message.part.delta": true, "message.part.removed": true,
	"permission.asked": true, "permission.replied": true, "permission.v2.asked": true,
	"question.asked": true, "question.replied": true, "question.rejected": true,
	"todo.updated": true, "file.edited": true, "file.watcher.updated": true,
	"command.executed": true, "plugin.added": true, "catalog.updated": true,
	"reference.updated": true, "integration.updated": true, "project.updated": true,
	"vcs.branch.updated": true, "storage.write": true,
}

var knownPrefixes = []string{"lsp.", "pty.", "tui.", "installation.", "mcp.", "session.next.", "workspace.", "ide."}
