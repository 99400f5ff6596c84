package permission_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestValidateQuestionAnswers(t *testing.T) {
	one := []sdk.QuestionPrompt{{Question: "Pick", Options: []string{"a", "b"}}}
	multi := []sdk.QuestionPrompt{{Question: "Pick", Options: []string{"a", "b"}, Multi: true}, {Question: "Why?"}}
	many := make([]string, permission.MaxAnswerValues+1)
	for i := range many {
		many[i] = strings.Repeat("v", i+1)
	}
	for _, tc := range []struct {
		name    string
		prompts []sdk.QuestionPrompt
		answers [][]string
		want    string // "" accepted, else part of the error
	}{
		{"one option", one, [][]string{{"a"}}, ""},
		{"free text beside options", one, [][]string{{"something else"}}, ""},
		{"multi and text", multi, [][]string{{"a", "b"}, {"because"}}, ""},
		{"too few", multi, [][]string{{"a"}}, "2 prompt(s) but 1 answer(s)"},
		{"too many", one, [][]string{{"a"}, {"b"}}, "1 prompt(s) but 2 answer(s)"},
		{"empty answer", one, [][]string{{}}, "answer 1 is empty"},
		{"two for single", one, [][]string{{"a", "b"}}, "takes one"},
		{"blank value", one, [][]string{{"  "}}, "empty value"},
		{"duplicate", multi, [][]string{{"a", "a"}, {"x"}}, "twice"},
		{"not utf8", one, [][]string{{"\xff"}}, "UTF-8"},
		{"value at the bound", one, [][]string{{strings.Repeat("x", permission.MaxAnswerValueBytes)}}, ""},
		{"value over the bound", one, [][]string{{strings.Repeat("x", permission.MaxAnswerValueBytes+1)}}, "more than"},
		{"values at the bound", []sdk.QuestionPrompt{{Question: "q", Multi: true}}, [][]string{many[:permission.MaxAnswerValues]}, ""},
		{"values over the bound", []sdk.QuestionPrompt{{Question: "q", Multi: true}}, [][]string{many}, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := permission.ValidateQuestionAnswers(tc.prompts, tc.answers)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case err != nil && !(errors.Is(err, permission.ErrBadQuestionAnswer) && errors.Is(err, permission.ErrInvalid)):
				t.Fatalf("error %v is not ErrBadQuestionAnswer and ErrInvalid", err)
			}
		})
	}
}

func TestParseQuestionAnswers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [][]string
		bad  bool
	}{
		{`["a", ["b", "c"]]`, [][]string{{"a"}, {"b", "c"}}, false},
		{`[]`, [][]string{}, false},
		{`"a"`, nil, true},
		{`{"a": 1}`, nil, true},
		{`[1]`, nil, true},
		{`[["a", 2]]`, nil, true},
	} {
		got, err := permission.ParseQuestionAnswers(json.RawMessage(tc.in))
		if tc.bad != (err != nil) || (!tc.bad && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseQuestionAnswers(%s) = %v, %v", tc.in, got, err)
		}
	}
}

var colours = sdk.QuestionRequest{ID: "q1", Prompts: []sdk.QuestionPrompt{{Question: "Colour?", Options: []string{"red", "blue"}}}}

// A question is announced once with its prompts, answered once, and every
// later answer hears why it is refused.
func TestQuestionAnsweredOnce(t *testing.T) {
	b := permission.New(permission.Options{Control: newControl(permission.ClaimUnknown, true)})
	rec := &recorder{}
	wait := b.Session("s").RecordQuestion(context.Background(), colours, rec.emit)
	req := rec.first(event.TypeQuestionRequest)
	if req == nil || req["resolver"] != permission.ResolverControl || req["request_id"] != "q1" ||
		!reflect.DeepEqual(req["prompts"], []any{map[string]any{"question": "Colour?", "options": []any{"red", "blue"}}}) {
		t.Fatalf("question.request %v", req)
	}
	if err := b.AnswerQuestion("q2", [][]string{{"red"}}, ""); !errors.Is(err, permission.ErrNoQuestion) {
		t.Errorf("unknown id: %v", err)
	}
	if err := b.AnswerQuestion("q1", [][]string{{"red"}}, "tty"); !errors.Is(err, permission.ErrInvalid) {
		t.Errorf("a source that is no front door: %v", err)
	}
	done := make(chan sdk.QuestionAnswer, 1)
	go func() { a, _ := wait(context.Background()); done <- a }()
	if err := b.AnswerQuestion("q1", [][]string{{"blue"}}, permission.SourceBoard); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if !a.Answered || !reflect.DeepEqual(a.Answers, [][]string{{"blue"}}) {
		t.Fatalf("the runtime got %+v", a)
	}
	if err := b.AnswerQuestion("q1", [][]string{{"red"}}, ""); !errors.Is(err, permission.ErrAlreadyAnswered) {
		t.Errorf("second answer: %v", err)
	}
	resp := rec.first(event.TypeQuestionResponse)
	if resp["source"] != "board" || resp["answered"] != true || !reflect.DeepEqual(resp["answers"], []any{[]any{"blue"}}) {
		t.Errorf("question.response %v", resp)
	}
	if len(b.PendingQuestions()) != 0 {
		t.Errorf("still pending: %v", b.PendingQuestions())
	}
}

// With nobody to answer, the person is told once and the question is given
// up at its bound: the runtime hears "no answer", a late answer "expired".
func TestQuestionGivenUpAtItsBound(t *testing.T) {
	var mu sync.Mutex
	var told []string
	b := permission.New(permission.Options{QuestionTimeout: 50 * time.Millisecond, OnQuestionUnanswered: func(r sdk.QuestionRequest, d time.Duration) {
		mu.Lock()
		told = append(told, permission.QuestionNote(r, d, ""))
		mu.Unlock()
	}})
	rec := &recorder{}
	start := time.Now()
	a, err := b.Session("s").RecordQuestion(context.Background(), colours, rec.emit)(context.Background())
	if err != nil || a.Answered {
		t.Fatalf("answer %+v, %v: want no answer", a, err)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Errorf("given up after %s, want about its 50ms bound", el)
	}
	if req := rec.first(event.TypeQuestionRequest); req["resolver"] != permission.ResolverNone || req["timeout_ms"] != int64(50) {
		t.Errorf("question.request %v", req)
	}
	if resp := rec.first(event.TypeQuestionResponse); resp["answered"] != false || resp["reason"] != "timeout" || resp["source"] != "avenor" {
		t.Errorf("question.response %v", resp)
	}
	mu.Lock()
	if len(told) != 1 || !strings.Contains(told[0], "nothing is set up to answer it; in 50ms it gets no answer") || !strings.Contains(told[0], "options: red, blue") {
		t.Errorf("told %q", told)
	}
	mu.Unlock()
	if err := b.AnswerQuestion("q1", [][]string{{"red"}}, ""); !errors.Is(err, permission.ErrQuestionExpired) {
		t.Errorf("late answer: %v", err)
	}
}

// A question whose turn ends is given up at once (reason ended).
func TestQuestionEndsWithItsTurn(t *testing.T) {
	b := permission.New(permission.Options{})
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	wait := b.Session("s").RecordQuestion(ctx, colours, rec.emit)
	cancel()
	if a, _ := wait(ctx); a.Answered {
		t.Fatalf("answered %+v", a)
	}
	if resp := rec.first(event.TypeQuestionResponse); resp["reason"] != "ended" {
		t.Errorf("question.response %v", resp)
	}
}

// Questions the broker cannot take — no id, no prompt, too many prompts, an
// id already waiting — get "no answer" at once and an avenor.error.
func TestQuestionRefusedAtOnce(t *testing.T) {
	many := make([]sdk.QuestionPrompt, permission.MaxQuestionPrompts+1)
	for i := range many {
		many[i] = sdk.QuestionPrompt{Question: "q"}
	}
	b := permission.New(permission.Options{QuestionTimeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := b.Session("s").RecordQuestion(ctx, colours, (&recorder{}).emit)
	defer func() { cancel(); held(ctx) }()
	for _, tc := range []struct {
		name string
		req  sdk.QuestionRequest
		want string
	}{
		{"no id", sdk.QuestionRequest{Prompts: colours.Prompts}, "missing request_id"},
		{"no prompt", sdk.QuestionRequest{ID: "q9"}, "has no prompt"},
		{"too many prompts", sdk.QuestionRequest{ID: "q9", Prompts: many}, "more than 32"},
		{"already waiting", colours, "already waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			a, err := b.Session("s").RecordQuestion(ctx, tc.req, rec.emit)(ctx)
			if err != nil || a.Answered {
				t.Fatalf("%+v %v", a, err)
			}
			if e := rec.first(event.TypeError); e == nil || !strings.Contains(e["message"].(string), tc.want) {
				t.Errorf("avenor.error %v, want one saying %q", e, tc.want)
			}
		})
	}
}

// The file handler writes <base>.question and takes a valid
// <base>.question.response, warning about one that does not fit; it removes
// the .question once answered.
func TestQuestionAnsweredByFile(t *testing.T) {
	base := filepath.Join(t.TempDir(), "run.perm")
	b := permission.New(permission.Options{FileBase: base, File: permission.FileOptions{PollInterval: 10 * time.Millisecond}})
	rec := &recorder{}
	wait := b.Session("ses_1").RecordQuestion(context.Background(), colours, rec.emit)
	done := make(chan sdk.QuestionAnswer, 1)
	go func() { a, _ := wait(context.Background()); done <- a }()
	var fq struct {
		RequestID string               `json:"request_id"`
		SessionID string               `json:"session_id"`
		Prompts   []sdk.QuestionPrompt `json:"prompts"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(base + permission.QuestionSuffix)
		if err == nil && json.Unmarshal(data, &fq) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no .question written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if fq.RequestID != "q1" || fq.SessionID != "ses_1" || !reflect.DeepEqual(fq.Prompts, colours.Prompts) {
		t.Fatalf(".question %+v", fq)
	}
	if err := os.WriteFile(base+permission.QuestionResponseSuffix, []byte(`{"answers": ["red", "blue"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for rec.first(event.TypeWarning) == nil {
		if time.Now().After(deadline) {
			t.Fatal("no warning about an answer that does not fit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := permission.WriteQuestionAnswer(base, "q1", [][]string{{"red"}}, true); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if !a.Answered || !reflect.DeepEqual(a.Answers, [][]string{{"red"}}) {
		t.Fatalf("answer %+v", a)
	}
	if resp := rec.first(event.TypeQuestionResponse); resp["source"] != "file" {
		t.Errorf("question.response %v", resp)
	}
	if _, err := os.Stat(base + permission.QuestionSuffix); err == nil {
		t.Error(".question left behind")
	}
}
