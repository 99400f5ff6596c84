package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// questionHost is a recHost that also hears questions, answering them with
// answer.
type questionHost struct {
	recHost
	answer func(runtime.QuestionRequest) runtime.QuestionAnswer
}

func (h *questionHost) RecordQuestion(ctx context.Context, req runtime.QuestionRequest) func(context.Context) (runtime.QuestionAnswer, error) {
	h.add(fmt.Sprintf("question:%s:%q:%v:%v:%v", req.ID, req.Prompts[0].Question, req.Prompts[0].Options, req.Prompts[0].Multi, req.Fields["tool"]))
	return func(context.Context) (runtime.QuestionAnswer, error) { return h.answer(req), nil }
}

// askingBackend asks one question mid-turn and says what it heard.
func askingBackend(t *testing.T) runtime.Backend {
	return serveFake(t, func(ctx context.Context, h runtime.Host, turn runtime.Turn) (runtime.TurnResult, error) {
		h.Emit(runtime.MessageChunk("ses_fake", "before"))
		a, err := runtime.AskQuestion(ctx, h, runtime.QuestionRequest{ID: "q1", Prompts: []runtime.QuestionPrompt{
			{Question: "Which colour?", Options: []string{"red", "blue"}, Multi: true},
			{Question: "Why?"},
		}, Fields: map[string]any{"tool": "ask"}})
		if err != nil {
			return runtime.TurnResult{}, err
		}
		h.Emit(runtime.MessageChunk("ses_fake", fmt.Sprintf("after:%v:%q", a.Answered, a.Answers)))
		return runtime.TurnResult{StopReason: runtime.StopEndTurn}, nil
	})
}

// A question crosses the wire in event order, with its prompts, and its
// answer comes back to the plugin.
func TestQuestionCrossesTheWireAndIsAnswered(t *testing.T) {
	b := askingBackend(t)
	h := &questionHost{answer: func(r runtime.QuestionRequest) runtime.QuestionAnswer {
		return runtime.QuestionAnswer{Answered: true, Answers: [][]string{{"red", "blue"}, {"because"}}}
	}}
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	if _, err := sess.Prompt(context.Background(), runtime.Turn{ID: "1", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"agent.message_chunk:before", `question:q1:"Which colour?":[red blue]:true:ask`,
		`agent.message_chunk:after:true:[["red" "blue"] ["because"]]`}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.log, want) {
		t.Fatalf("log %q, want %q", h.log, want)
	}
}

// A host that cannot hear questions answers "no answer" at once: the
// plugin's turn goes on rather than hanging.
func TestQuestionToAHostWithoutQuestionsHasNoAnswer(t *testing.T) {
	b := askingBackend(t)
	h := &recHost{}
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	if _, err := sess.Prompt(context.Background(), runtime.Turn{ID: "1", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"agent.message_chunk:before", `agent.message_chunk:after:false:[]`}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Equal(h.log, want) {
		t.Fatalf("log %q, want %q", h.log, want)
	}
}
