package appserver

import (
	"context"
	"encoding/json"

	"github.com/avenor-go/avenor/sdk/jsonrpc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// methodUserInput is Codex's question to the user: its request_user_input
// tool (runtime-protocols.md §3.5), answered with
// {answers: {<question id>: {answers: [<string>…]}}}.
const methodUserInput = "item/tool/requestUserInput"

// userInputParams is what item/tool/requestUserInput carries.
type userInputParams struct {
	ThreadID   string `json:"threadId"`
	TurnID     string `json:"turnId"`
	ItemID     string `json:"itemId"`
	IsBlocking bool   `json:"isBlocking"`
	Questions  []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		IsOther  bool   `json:"isOther"`
		IsSecret bool   `json:"isSecret"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

// userInput relays Codex's question to the host as one question, a prompt
// per Codex question, and answers with what the host heard; with no answer
// (nobody answered within the host's bound, the turn ended) Codex gets an
// empty answer map, and the turn goes on.
func (s *Session) userInput(ctx context.Context, requestID string, params json.RawMessage) (any, *jsonrpc.RPCError) {
	var p userInputParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.RPCError{Code: jsonrpc.CodeInvalidParams, Message: "avenor could not read " + methodUserInput + ": " + err.Error()}
	}
	req := runtime.QuestionRequest{ID: requestID, Fields: map[string]any{"toolCallId": p.ItemID, "native_method": methodUserInput,
		"threadId": p.ThreadID, "turnId": p.TurnID, "session_id": s.id, "is_blocking": p.IsBlocking}}
	for _, q := range p.Questions {
		prompt := runtime.QuestionPrompt{Question: q.Question, Header: q.Header}
		for _, o := range q.Options {
			prompt.Options = append(prompt.Options, o.Label)
		}
		req.Prompts = append(req.Prompts, prompt)
	}
	none := map[string]any{"answers": map[string]any{}}
	if len(req.Prompts) == 0 {
		return none, nil
	}

	// A cancel of the turn ends the wait, as for an approval.
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := context.AfterFunc(t.rt.Context(), cancel)
		defer func() { stop(); cancel() }()
	}
	s.gate.Flush()
	a, err := runtime.AskQuestion(ctx, s.host, req)
	if err != nil || !a.Answered || len(a.Answers) != len(p.Questions) {
		return none, nil
	}
	answers := make(map[string]any, len(p.Questions))
	for i, q := range p.Questions {
		answers[q.ID] = map[string]any{"answers": a.Answers[i]}
	}
	return map[string]any{"answers": answers}, nil
}
