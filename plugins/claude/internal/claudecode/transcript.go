package claudecode

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// transcriptTail reads a Claude Code JSONL transcript incrementally
// (runtime-protocols.md §5.4): complete lines only, from where it left off.
// The file is found by session id under <config>/projects/*/, so the
// project-key encoding (and its cut for long paths) does not matter.
type transcriptTail struct {
	configDir string // ~/.claude or $CLAUDE_CONFIG_DIR
	sessionID string
	path      string
	offset    int64
	partial   []byte
}

// transcriptRecord is the part of a transcript line the backend reads.
// 2.1.332 writes many other record types (attachment, api-request*,
// queue-operation…); they are skipped.
type transcriptRecord struct {
	Type    string      `json:"type"`
	Subtype string      `json:"subtype"`
	Message *apiMessage `json:"message"`
}

func (t *transcriptTail) find() string {
	if t.path != "" {
		return t.path
	}
	matches, _ := filepath.Glob(filepath.Join(t.configDir, "projects", "*", t.sessionID+".jsonl"))
	if len(matches) > 0 {
		t.path = matches[0]
	}
	return t.path
}

// skipToEnd starts reading at the current end: earlier turns are history.
func (t *transcriptTail) skipToEnd() {
	if p := t.find(); p != "" {
		if fi, err := os.Stat(p); err == nil {
			t.offset = fi.Size()
		}
	}
	t.partial = nil
}

// next returns the complete lines written since the last call.
func (t *transcriptTail) next() [][]byte {
	p := t.find()
	if p == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil || len(data) == 0 {
		return nil
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(data[:i]); len(line) > 0 {
			lines = append(lines, bytes.Clone(line))
		}
		data = data[i+1:]
	}
	t.partial = bytes.Clone(data)
	return lines
}

// transcriptEvents maps one transcript record to events, and says whether
// it ends the turn (system/turn_duration, written after the last answer)
// and the assistant text it carries.
func transcriptEvents(sid string, line []byte, kinds map[string]string) (evs []runtime.Event, end bool, text string) {
	var r transcriptRecord
	if json.Unmarshal(line, &r) != nil {
		return nil, false, ""
	}
	switch r.Type {
	case "system":
		return nil, r.Subtype == "turn_duration", ""
	case "assistant":
		for _, b := range r.Message.blocks() {
			switch b.Type {
			case "text":
				if b.Text != "" {
					evs = append(evs, runtime.MessageChunk(sid, b.Text))
					text += b.Text
				}
			case "thinking":
				if b.Thinking != "" {
					evs = append(evs, runtime.ThoughtChunk(sid, b.Thinking))
				}
			case "tool_use":
				kinds[b.ID] = toolKind(b.Name)
				evs = append(evs, toolCallEvent(sid, b))
			}
		}
	case "user":
		for _, b := range r.Message.blocks() {
			if b.Type == "tool_result" {
				kind := kinds[b.ToolUseID]
				if kind == "" {
					kind = "other"
				}
				evs = append(evs, toolResultEvent(sid, b, kind))
			}
		}
	}
	return evs, false, text
}

// claudeConfigDir is where Claude Code keeps its state for env.
func claudeConfigDir(env []string) string {
	if d := lookupEnv(env, "CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(lookupEnv(env, "HOME"), ".claude")
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := bytes.Cut([]byte(env[i]), []byte("=")); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}
