package fromproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// QuestionRequest reads a plugin's question; its fields must be a JSON
// object. On error the request still carries its ID, so that it can be
// answered.
func QuestionRequest(r *pb.QuestionRequest) (runtime.QuestionRequest, error) {
	fields, err := Object(r.GetJson())
	if err != nil {
		return runtime.QuestionRequest{ID: r.GetRequestId()}, fmt.Errorf("question %q: %w", r.GetRequestId(), err)
	}
	prompts := make([]runtime.QuestionPrompt, len(r.GetPrompts()))
	for i, p := range r.GetPrompts() {
		prompts[i] = runtime.QuestionPrompt{Question: p.GetQuestion(), Options: p.GetOptions(), Multi: p.GetMulti(), Header: p.GetHeader()}
	}
	return runtime.QuestionRequest{ID: r.GetRequestId(), Prompts: prompts, Fields: fields}, nil
}

// QuestionAnswer reads the host's answer to a question.
func QuestionAnswer(a *pb.QuestionAnswer) runtime.QuestionAnswer {
	out := runtime.QuestionAnswer{Answered: a.GetAnswered()}
	if out.Answered {
		out.Answers = make([][]string, len(a.GetReplies()))
		for i, r := range a.GetReplies() {
			out.Answers[i] = r.GetValues()
		}
	}
	return out
}

// QuestionRequest reads a KindQuestionRequest message.
func (m Message) QuestionRequest() (runtime.QuestionRequest, error) {
	return QuestionRequest(m.m.GetQuestionRequest())
}

// QuestionAnswer reads a HostQuestionAnswer message: the question it
// answers and the answer.
func (m HostMessage) QuestionAnswer() (requestID string, a runtime.QuestionAnswer) {
	qa := m.m.GetQuestionAnswer()
	return qa.GetRequestId(), QuestionAnswer(qa)
}
