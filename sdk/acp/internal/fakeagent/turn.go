package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// prompt runs one turn and answers the session/prompt request.
func (a *agent) prompt(id json.RawMessage, sid string, p map[string]any) {
	s, err := a.load(sid)
	if err != nil {
		a.fault(id, -32002, "Resource not found: session "+sid)
		return
	}
	var parts []string
	blocks, _ := p["prompt"].([]any)
	for _, b := range blocks {
		if m, ok := b.(map[string]any); ok {
			if t, ok := m["text"].(string); ok {
				parts = append(parts, t)
			}
		}
	}
	text := strings.Join(parts, "\n")
	a.mu.Lock()
	cancel := a.cancels[sid] // armed when the prompt was read
	if cancel == nil {
		cancel = make(chan struct{})
		a.cancels[sid] = cancel
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.cancels[sid] == cancel {
			delete(a.cancels, sid)
		}
		a.mu.Unlock()
	}()
	earlier := append([]string(nil), s.Prompts...)
	s.Prompts = append(s.Prompts, text)
	a.save(s)

	stop := a.turn(s, text, earlier, cancel)
	res := map[string]any{"stopReason": stop}
	if a.profile == "opencode" {
		res["usage"] = map[string]any{"inputTokens": len(text), "outputTokens": 5, "totalTokens": len(text) + 5}
	}
	a.reply(id, res)
}

func (a *agent) say(sid, s string) {
	a.update(sid, map[string]any{"sessionUpdate": "agent_message_chunk", "content": text(s)})
}

// turn does what the prompt asks and returns the stop reason.
func (a *agent) turn(s *session, prompt string, earlier []string, cancel chan struct{}) string {
	switch {
	case strings.Contains(prompt, "SLOW"):
		for i := 0; i < 300; i++ {
			select {
			case <-cancel:
				return "cancelled"
			case <-time.After(100 * time.Millisecond):
			}
			a.say(s.ID, fmt.Sprintf("tick %d ", i))
		}
		return "end_turn"
	case strings.Contains(prompt, "RECALL"):
		a.say(s.ID, "HISTORY: "+strings.Join(earlier, " | "))
		return "end_turn"
	case a.profile == "cursor" && strings.Contains(prompt, "QUESTION"):
		return a.askQuestion(s)
	case a.profile == "cursor" && strings.Contains(prompt, "PLAN"):
		return a.createPlan(s)
	case a.profile == "cursor" && strings.Contains(prompt, "TODOS"):
		todos := []any{map[string]any{"id": "1", "content": "write tests", "status": "in_progress"}}
		a.notify("cursor/update_todos", map[string]any{"toolCallId": "todo-1", "todos": todos, "merge": false})
		a.call("cursor/update_todos", map[string]any{"toolCallId": "todo-2", "merge": true,
			"todos": []any{map[string]any{"id": "1", "content": "write tests", "status": "completed"}, map[string]any{"id": "2", "content": "ship", "status": "pending"}}})
		a.say(s.ID, "TODOS")
		return "end_turn"
	case strings.Contains(prompt, "out.txt") || strings.Contains(strings.ToLower(prompt), "write"):
		return a.shell(s, cancel)
	}
	if strings.Contains(prompt, "THINK") {
		a.update(s.ID, map[string]any{"sessionUpdate": "agent_thought_chunk", "content": text("thinking")})
	}
	a.say(s.ID, "ECHO: "+prompt)
	return "end_turn"
}

// shell asks to run `echo hello > out.txt`, the way each runtime does.
func (a *agent) shell(s *session, cancel chan struct{}) string {
	callID := "call_" + randHex(4)
	call := map[string]any{"toolCallId": callID, "title": "echo hello > out.txt", "kind": "execute", "status": "pending",
		"rawInput": map[string]any{"command": "echo hello > out.txt"}}
	var options []any
	opt := func(id, kind, name string) {
		options = append(options, map[string]any{"optionId": id, "kind": kind, "name": name})
	}
	switch a.profile {
	case "gemini": // no tool_call first
		opt("proceed_always", "allow_always", "Allow for this session")
		opt("proceed_once", "allow_once", "Allow")
		opt("cancel", "reject_once", "Reject")
	case "cursor":
		a.update(s.ID, map[string]any{"sessionUpdate": "tool_call", "toolCallId": callID, "title": "Shell", "kind": "execute", "status": "pending"})
		opt("allow-once", "allow_once", "Allow once")
		opt("allow-always", "allow_always", "Allow always")
		opt("reject-once", "reject_once", "Reject")
	default:
		a.update(s.ID, map[string]any{"sessionUpdate": "tool_call", "toolCallId": callID, "title": "bash", "kind": "execute", "status": "pending", "rawInput": map[string]any{}})
		a.update(s.ID, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "in_progress", "title": "echo hello > out.txt", "rawInput": map[string]any{"command": "echo hello > out.txt"}})
		opt("once", "allow_once", "Allow once")
		opt("always", "allow_always", "Always allow")
		opt("reject", "reject_once", "Reject")
	}
	answer := make(chan msg, 1)
	go func() {
		answer <- a.call("session/request_permission", map[string]any{"sessionId": s.ID, "toolCall": call, "options": options})
	}()
	var m msg
	select {
	case m = <-answer:
	case <-cancel:
		<-answer // the client must answer it "cancelled"
		return "cancelled"
	}
	var res struct {
		Outcome struct{ Outcome, OptionID string } `json:"outcome"`
	}
	_ = json.Unmarshal(m.Result, &res)
	if m.Error != nil || res.Outcome.Outcome == "cancelled" {
		return "cancelled"
	}
	kind := ""
	for _, o := range options {
		if om := o.(map[string]any); om["optionId"] == res.Outcome.OptionID {
			kind, _ = om["kind"].(string)
		}
	}
	if !strings.HasPrefix(kind, "allow") {
		a.update(s.ID, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "failed",
			"rawOutput": map[string]any{"error": "The user rejected permission to use this specific tool call."}})
		if a.profile == "opencode" {
			return "end_turn" // OpenCode stops the loop
		}
		a.say(s.ID, "DONE (not written)")
		return "end_turn"
	}
	if err := os.WriteFile(filepath.Join(s.Cwd, "out.txt"), []byte("hello\n"), 0o644); err != nil {
		a.update(s.ID, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "failed", "rawOutput": map[string]any{"error": err.Error()}})
		a.say(s.ID, "FAILED: "+err.Error())
		return "end_turn"
	}
	a.update(s.ID, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "completed",
		"content": []any{map[string]any{"type": "content", "content": text("(no output)")}}})
	a.say(s.ID, "DONE")
	return "end_turn"
}

// askQuestion is Cursor's blocking multiple-choice question.
func (a *agent) askQuestion(s *session) string {
	m := a.call("cursor/ask_question", map[string]any{"toolCallId": "q-" + randHex(3), "title": "Before I start",
		"questions": []any{map[string]any{"id": "lang", "prompt": "Which language?", "allowMultiple": false,
			"options": []any{map[string]any{"id": "go", "label": "Go"}, map[string]any{"id": "rust", "label": "Rust"}}}}})
	var res struct {
		Outcome struct {
			Outcome string `json:"outcome"`
			Answers []struct {
				QuestionID        string   `json:"questionId"`
				SelectedOptionIDs []string `json:"selectedOptionIds"`
			} `json:"answers"`
		} `json:"outcome"`
	}
	_ = json.Unmarshal(m.Result, &res)
	if res.Outcome.Outcome == "cancelled" {
		return "cancelled"
	}
	var picked []string
	for _, an := range res.Outcome.Answers {
		picked = append(picked, an.QuestionID+"="+strings.Join(an.SelectedOptionIDs, "+"))
	}
	a.say(s.ID, fmt.Sprintf("ANSWER %s %s", res.Outcome.Outcome, strings.Join(picked, ",")))
	return "end_turn"
}

// createPlan is Cursor's blocking plan approval.
func (a *agent) createPlan(s *session) string {
	m := a.call("cursor/create_plan", map[string]any{"toolCallId": "plan-" + randHex(3), "name": "Add a README",
		"overview": "Write a README", "plan": "1. Write README.md\n2. Commit",
		"todos": []any{map[string]any{"id": "1", "content": "Write README.md", "status": "pending"}}})
	var res struct {
		Outcome struct{ Outcome string } `json:"outcome"`
	}
	_ = json.Unmarshal(m.Result, &res)
	a.say(s.ID, "PLAN "+res.Outcome.Outcome)
	if res.Outcome.Outcome == "cancelled" {
		return "cancelled"
	}
	return "end_turn"
}
