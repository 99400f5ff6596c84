package toproto

import (
	"fmt"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// AskQuestion is a plugin's question to the user; its fields cross as JSON.
func AskQuestion(r runtime.QuestionRequest) (Message, error) {
	raw, err := Object(r.Fields)
	if err != nil {
		return Message{}, fmt.Errorf("question %q: %w", r.ID, err)
	}
	prompts := make([]*pb.QuestionPrompt, len(r.Prompts))
	for i, p := range r.Prompts {
		prompts[i] = &pb.QuestionPrompt{Question: p.Question, Options: p.Options, Multi: p.Multi, Header: p.Header}
	}
	return Message{&pb.PluginMessage{Msg: &pb.PluginMessage_QuestionRequest{QuestionRequest: &pb.QuestionRequest{
		RequestId: r.ID, Prompts: prompts, Json: raw,
	}}}}, nil
}

// AnswerQuestion answers question id.
func AnswerQuestion(id string, a runtime.QuestionAnswer) *pb.HostMessage {
	replies := make([]*pb.QuestionReply, len(a.Answers))
	for i, v := range a.Answers {
		replies[i] = &pb.QuestionReply{Values: v}
	}
	return &pb.HostMessage{Msg: &pb.HostMessage_QuestionAnswer{QuestionAnswer: &pb.QuestionAnswer{
		RequestId: id, Answered: a.Answered, Replies: replies,
	}}}
}
