package runtime

import "context"

// CapQuestions: the backend relays its runtime's own questions to the user
// (QuestionAsker); a backend that does not declare it never asks one.
const CapQuestions Capability = "questions"

// QuestionPrompt is one question a runtime asks the user.
type QuestionPrompt struct {
	Question string   `json:"question"`
	Options  []string `json:"options,omitempty"` // empty: a free-text answer
	Multi    bool     `json:"multi,omitempty"`   // more than one option may be chosen
	Header   string   `json:"header,omitempty"`  // a short label, when the runtime gives one
}

// QuestionRequest is a runtime asking the user one or more questions.
type QuestionRequest struct {
	ID      string // unique within the session
	Prompts []QuestionPrompt
	// Raw backend fields copied into the question.request event.
	Fields map[string]any
}

// QuestionAnswer is the host's answer to a QuestionRequest. Answered false
// means nobody answered (the host's bound ran out, the turn ended): the
// backend tells its runtime there is no answer and the turn goes on.
type QuestionAnswer struct {
	Answered bool
	// Answers holds one reply per prompt, in order: the chosen options, or
	// the free text as one value.
	Answers [][]string
}

// QuestionAsker is an optional Host extension that hosts speaking protocol
// 1.x with questions implement. A backend asks only in a session opened
// with OpenRequest.Questions: AskQuestion raises req, in event order, and
// blocks until it is answered, the host gives up (an answer with Answered
// false), or ctx is done. A backend declares CapQuestions only when it uses
// it, and must treat a Host without it as "no answer".
type QuestionAsker interface {
	AskQuestion(ctx context.Context, req QuestionRequest) (QuestionAnswer, error)
}

// AskQuestion asks h when it can, and otherwise answers "no answer" at once,
// so a backend needs no second path for hosts without questions.
func AskQuestion(ctx context.Context, h Host, req QuestionRequest) (QuestionAnswer, error) {
	if q, ok := h.(QuestionAsker); ok {
		return q.AskQuestion(ctx, req)
	}
	return QuestionAnswer{}, nil
}

// QuestionRecorder is an optional Host extension that the avenor host
// implements: RecordQuestion announces req synchronously, in stream order,
// and returns a function that waits for its answer, as PermissionRecorder
// does for permissions.
type QuestionRecorder interface {
	RecordQuestion(ctx context.Context, req QuestionRequest) (wait func(ctx context.Context) (QuestionAnswer, error))
}
