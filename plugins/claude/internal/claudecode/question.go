package claudecode

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// askUserQuestionTool is Claude Code's tool for asking the user: its
// can_use_tool request carries {questions: [{question, header, options:
// [{label, description}], multiSelect}]}, and an allow whose updatedInput
// adds answers {<question text>: <label, or labels joined by ", ">} is
// the user's answer.
const askUserQuestionTool = "AskUserQuestion"

type askUserQuestionInput struct {
	Questions []struct {
		Question    string `json:"question"`
		Header      string `json:"header"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// question relays AskUserQuestion to the host as a question rather than a
// permission, and answers the CLI with what the user said; with no answer
// (nobody answered within the host's bound, the turn ended) the tool is
// denied with a message saying so, and the model goes on.
func (s *streamSession) question(requestID string, req canUseTool) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	ctx := context.Background()
	if t != nil {
		ctx = t.rt.Context()
	}
	var in askUserQuestionInput
	_ = json.Unmarshal(req.Input, &in)
	q := runtime.QuestionRequest{ID: requestID, Fields: map[string]any{"session_id": s.cfg.SessionID, "toolCallId": req.ToolUseID, "tool": askUserQuestionTool}}
	for _, iq := range in.Questions {
		p := runtime.QuestionPrompt{Question: iq.Question, Header: iq.Header, Multi: iq.MultiSelect}
		for _, o := range iq.Options {
			p.Options = append(p.Options, o.Label)
		}
		q.Prompts = append(q.Prompts, p)
	}
	resp := map[string]any{"behavior": "deny", "message": "The user did not answer the question; go on without the answer.", "interrupt": false}
	if len(q.Prompts) > 0 {
		s.gate.Flush()
		a, err := runtime.AskQuestion(ctx, s.host, q)
		if err == nil && a.Answered && len(a.Answers) == len(in.Questions) {
			var input map[string]any
			if json.Unmarshal(req.Input, &input) != nil || input == nil {
				input = map[string]any{}
			}
			answers := make(map[string]any, len(in.Questions))
			for i, iq := range in.Questions {
				answers[iq.Question] = strings.Join(a.Answers[i], ", ")
			}
			input["answers"] = answers
			resp = map[string]any{"behavior": "allow", "updatedInput": input}
		}
	}
	if err := s.write(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": resp}}); err != nil {
		s.log.Debug("answering AskUserQuestion", "error", err)
	}
}
