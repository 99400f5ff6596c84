package cursoracp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/avenor-go/avenor/sdk/acp"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Cursor's agent→client methods (runtime-protocols.md §6.2). They do not
// start with "_" and some block the turn until answered, so each one gets an
// answer: questions and plan approvals go to the host as permission
// requests that only a person may answer (requires_user_input), todos
// become session.plan events, anything else is passed on as avenor.native
// and acknowledged.
const (
	methodAskQuestion = "cursor/ask_question"
	methodCreatePlan  = "cursor/create_plan"
	methodUpdateTodos = "cursor/update_todos"
	methodTask        = "cursor/task"
)

// skipOption is the option that skips a question.
const skipOption = "avenor:skip"

// extensions holds one session's Cursor state: the todo list that
// update_todos merges into.
type extensions struct {
	mu    sync.Mutex
	order []string
	todos map[string]todo
}

type todo struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
}

func newExtensions() *extensions { return &extensions{todos: map[string]todo{}} }

func (e *extensions) handlers() map[string]acp.Extension {
	return map[string]acp.Extension{
		methodAskQuestion: e.askQuestion,
		methodCreatePlan:  e.createPlan,
		methodUpdateTodos: e.updateTodos,
		methodTask:        e.task,
	}
}

type askQuestionParams struct {
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Questions  []struct {
		ID      string `json:"id"`
		Prompt  string `json:"prompt"`
		Options []struct {
			ID    string `json:"id"`
			Label string `json:"label"`
		} `json:"options"`
		AllowMultiple bool `json:"allowMultiple"`
	} `json:"questions"`
}

type questionAnswer struct {
	QuestionID        string   `json:"questionId"`
	SelectedOptionIDs []string `json:"selectedOptionIds"`
}

func outcome(o map[string]any) map[string]any { return map[string]any{"outcome": o} }

var cancelledOutcome = outcome(map[string]any{"outcome": "cancelled"})

// askQuestion turns cursor/ask_question into a permission request whose
// options are the answers (option id = the answer's id, or
// "<question id>/<answer id>" when several questions are asked) plus
// "avenor:skip". The chosen option answers its question; a decision's
// message may answer others as a JSON object {"<question id>": "<answer
// id>" or ["<id>", …]}.
func (e *extensions) askQuestion(ctx context.Context, s *acp.Session, method string, params json.RawMessage) (any, *acp.RPCError) {
	var p askQuestionParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &acp.RPCError{Code: acp.CodeInvalidParams, Message: "malformed " + method + ": " + err.Error()}
	}
	if len(p.Questions) == 0 {
		return outcome(map[string]any{"outcome": "skipped", "reason": "no questions"}), nil
	}
	many := len(p.Questions) > 1
	type choice struct{ question, answer string }
	choices := map[string]choice{}
	var opts []runtime.PermissionOption
	var prompts []string
	for _, q := range p.Questions {
		prompts = append(prompts, q.Prompt)
		for _, o := range q.Options {
			id, name := o.ID, o.Label
			if many {
				id, name = q.ID+"/"+o.ID, q.Prompt+" "+o.Label
			}
			choices[id] = choice{q.ID, o.ID}
			opts = append(opts, runtime.PermissionOption{ID: id, Kind: runtime.KindAllowOnce, Name: name})
		}
	}
	opts = append(opts, runtime.PermissionOption{ID: skipOption, Kind: "reject_once", Name: "Skip the question"})
	question := strings.Join(prompts, " ")
	if p.Title != "" {
		question = p.Title + ": " + question
	}
	title := p.Title
	if title == "" {
		title = "Question"
	}
	s.AnnounceTool(map[string]any{"toolCallId": p.ToolCallID, "title": title, "kind": "other"})
	var raw any
	_ = json.Unmarshal(params, &raw)
	d, err := s.AskPermission(ctx, runtime.PermissionRequest{
		ID: acp.IDString(acp.RequestID(ctx)), Options: opts, Tool: "ask_question", Question: question,
		RequiresUserInput: true,
		Fields:            map[string]any{"session_id": s.ID(), "cursor_method": method, "cursor_request": raw},
	})
	if err != nil || d.Outcome != runtime.OutcomeSelected {
		return cancelledOutcome, nil
	}
	if d.OptionID == skipOption {
		reason := d.Message
		if reason == "" {
			reason = "skipped through avenor"
		}
		return outcome(map[string]any{"outcome": "skipped", "reason": reason}), nil
	}
	answers := map[string][]string{}
	if c, ok := choices[d.OptionID]; ok {
		answers[c.question] = []string{c.answer}
	}
	var extra map[string]any
	if json.Unmarshal([]byte(d.Message), &extra) == nil {
		for q, v := range extra {
			switch v := v.(type) {
			case string:
				answers[q] = []string{v}
			case []any:
				for _, x := range v {
					if s, ok := x.(string); ok {
						answers[q] = append(answers[q], s)
					}
				}
			}
		}
	}
	if len(answers) == 0 {
		return cancelledOutcome, nil
	}
	var list []questionAnswer
	for _, q := range p.Questions {
		if ids, ok := answers[q.ID]; ok {
			list = append(list, questionAnswer{QuestionID: q.ID, SelectedOptionIDs: ids})
		}
	}
	return outcome(map[string]any{"outcome": "answered", "answers": list}), nil
}

// createPlan turns cursor/create_plan into a permission request: accept
// or reject the plan.
func (e *extensions) createPlan(ctx context.Context, s *acp.Session, method string, params json.RawMessage) (any, *acp.RPCError) {
	var p struct {
		ToolCallID string `json:"toolCallId"`
		Name       string `json:"name"`
		Overview   string `json:"overview"`
		Plan       string `json:"plan"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &acp.RPCError{Code: acp.CodeInvalidParams, Message: "malformed " + method + ": " + err.Error()}
	}
	what := p.Name
	if what == "" {
		what = p.Overview
	}
	question := "Approve the plan?"
	if what != "" {
		question = fmt.Sprintf("Approve the plan %q?", what)
	}
	s.AnnounceTool(map[string]any{"toolCallId": p.ToolCallID, "title": "Plan: " + what, "kind": "think"})
	var raw any
	_ = json.Unmarshal(params, &raw)
	d, err := s.AskPermission(ctx, runtime.PermissionRequest{
		ID: acp.IDString(acp.RequestID(ctx)), Tool: "create_plan", Question: question, RequiresUserInput: true,
		Options: []runtime.PermissionOption{
			{ID: "accept", Kind: runtime.KindAllowOnce, Name: "Accept the plan"},
			{ID: "reject", Kind: "reject_once", Name: "Reject the plan"},
		},
		Fields: map[string]any{"session_id": s.ID(), "cursor_method": method, "cursor_request": raw},
	})
	switch {
	case err != nil || d.Outcome != runtime.OutcomeSelected:
		return cancelledOutcome, nil
	case d.OptionID == "accept" || (d.OptionID == "" && d.Kind != runtime.KindReject):
		return outcome(map[string]any{"outcome": "accepted"}), nil
	}
	o := map[string]any{"outcome": "rejected"}
	if d.Message != "" {
		o["reason"] = d.Message
	}
	return outcome(o), nil
}

// updateTodos merges Cursor's todos (a request or a notification) and
// emits the whole list as session.plan, as ACP's plan update would.
func (e *extensions) updateTodos(_ context.Context, s *acp.Session, method string, params json.RawMessage) (any, *acp.RPCError) {
	var p struct {
		ToolCallID string `json:"toolCallId"`
		Todos      []todo `json:"todos"`
		Merge      bool   `json:"merge"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		s.Emit(acp.NativeEvent(method, s.ID(), string(params)))
		return map[string]any{}, nil
	}
	e.mu.Lock()
	if !p.Merge {
		e.order, e.todos = nil, map[string]todo{}
	}
	for _, t := range p.Todos {
		if _, ok := e.todos[t.ID]; !ok {
			e.order = append(e.order, t.ID)
		}
		e.todos[t.ID] = t
	}
	entries := make([]any, 0, len(e.order))
	todos := make([]any, 0, len(e.order))
	for _, id := range e.order {
		t := e.todos[id]
		entries = append(entries, map[string]any{"content": t.Content, "status": t.Status, "priority": "medium"})
		todos = append(todos, map[string]any{"id": t.ID, "content": t.Content, "status": t.Status})
	}
	e.mu.Unlock()
	s.Emit(runtime.NewEvent(runtime.EventPlan, map[string]any{
		"session_id": s.ID(), "session_update": "plan", "source": method, "entries": entries, "todos": todos,
		"toolCallId": p.ToolCallID,
	}))
	return map[string]any{}, nil
}

// task passes cursor/task on and acknowledges it.
func (e *extensions) task(_ context.Context, s *acp.Session, method string, params json.RawMessage) (any, *acp.RPCError) {
	var raw any
	_ = json.Unmarshal(params, &raw)
	s.Emit(acp.NativeEvent(method, s.ID(), raw))
	return map[string]any{}, nil
}
