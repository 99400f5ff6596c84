package hosttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// askScript asks a two-prompt question (a multi choice, then free text)
// once the runtime process runs, then keeps the turn alive for late answers.
const askScript = "child 30\nsleep 200ms\n" +
	`question "Which colours?" options=red|blue|green multi=true and="Why?"` + "\nsleep 1500ms\nsay \" done\""

// waitQuestion waits for the question.request in the log at path and
// returns it.
func waitQuestion(t *testing.T, path string) event {
	t.Helper()
	var q []event
	if !waitFor(15*time.Second, func() bool {
		q = only(readEventsQuiet(path), "question.request")
		return len(q) > 0
	}) {
		t.Fatalf("no question.request in %s", path)
	}
	return q[0]
}

func rpcErr(t *testing.T, err error) *client.RPCError {
	t.Helper()
	var rpc *client.RPCError
	if !errors.As(err, &rpc) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	return rpc
}

// TestQuestionAnsweredOverControlSocket: the scripted runtime's question is
// a question.request with its prompts; answer_question delivers the answer
// once (question.response source control), the runtime hears it, and the
// socket refuses a second answer, an unknown request_id and answers that do
// not fit, each saying which.
func TestQuestionAnsweredOverControlSocket(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	p := w.start(nil, "--backend", "scripted", "--questions", "--run-id", "q1", "--control-socket", sock, "--on-event", evPath, "--prompt", askScript)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	q := waitQuestion(t, evPath)
	id := q.str("request_id")
	if q.str("resolver") != "control" || fmt.Sprint(q["prompts"]) != "[map[multi:true options:[red blue green] question:Which colours?] map[question:Why?]]" {
		t.Fatalf("question.request %v", q)
	}
	if ms, _ := q.num("timeout_ms"); ms != float64(10*time.Minute/time.Millisecond) {
		t.Errorf("timeout_ms %v, want the 10 min default", q["timeout_ms"])
	}
	if st, err := c.Status(ctx); err != nil || st.Phase != "waiting" {
		t.Errorf("status while the question waits: phase %q, %v; want waiting", st.Phase, err)
	}

	err := c.AnswerQuestion(ctx, "", "nope", [][]string{{"red"}, {"x"}})
	if rpc := rpcErr(t, err); rpc.Code != client.CodeServerError || !strings.Contains(rpc.Message, `no question "nope" is waiting`) {
		t.Errorf("unknown request_id: %v", err)
	}
	err = c.AnswerQuestion(ctx, "", id, [][]string{{"red"}})
	if rpc := rpcErr(t, err); rpc.Code != client.CodeInvalidParams || !strings.Contains(rpc.Error(), "2 prompt(s) but 1 answer(s)") {
		t.Errorf("too few answers: %v", err)
	}
	if err := c.AnswerQuestion(ctx, "", id, [][]string{{"red", "blue"}, {"they are calm"}}); err != nil {
		t.Fatal(err)
	}
	err = c.AnswerQuestion(ctx, "", id, [][]string{{"green"}, {"again"}})
	if rpc := rpcErr(t, err); rpc.Code != client.CodeServerError || rpc.Message != fmt.Sprintf("question %q was already answered", id) {
		t.Errorf("second answer: %v", err)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	for i, ev := range evs {
		if ev.name() == "question.request" && (i == 0 || evs[i-1].name() != "agent.status" || evs[i-1].str("phase") != "waiting" || evs[i-1].str("label") != "Which colours?") {
			t.Errorf("question.request not preceded by agent.status waiting with its question: %v", evs[max(i-1, 0)])
		}
	}
	resp := only(evs, "question.response")
	if len(resp) != 1 || resp[0].str("source") != "control" || resp[0]["answered"] != true ||
		!reflect.DeepEqual(resp[0]["answers"], []any{[]any{"red", "blue"}, []any{"they are calm"}}) {
		t.Fatalf("question.response %v", resp)
	}
	if end := lastSessionEnd(t, evs); end.str("final_output") != `answer [["red","blue"],["they are calm"]] done` {
		t.Fatalf("the runtime heard %q", end.str("final_output"))
	}
}

// TestQuestionWithNobodyToAnswerGoesOn: with nothing set up to answer, the
// run says so on stderr, and past its bound (AVENOR_QUESTION_TIMEOUT) the
// runtime hears "no answer" and the turn goes on rather than hanging; an
// answer after that is refused as expired.
func TestQuestionWithNobodyToAnswerGoesOn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	p := w.start([]string{"AVENOR_QUESTION_TIMEOUT=700ms"}, "--backend", "scripted", "--questions", "--control-socket", sock, "--on-event", evPath,
		"--prompt", "child 30\n"+`question "Proceed?" options=yes|no`+"\nsleep 2s\nsay \" done\"")
	var resp []event
	if !waitFor(15*time.Second, func() bool {
		resp = only(readEventsQuiet(evPath), "question.response")
		return len(resp) > 0
	}) {
		t.Fatal("no question.response: the question was never given up")
	}
	q := only(readEventsQuiet(evPath), "question.request")[0]
	if q.str("resolver") != "none" {
		t.Errorf("question.request resolver %q, want none (no client connected)", q.str("resolver"))
	}
	if resp[0]["answered"] != false || resp[0].str("reason") != "timeout" || resp[0].str("source") != "avenor" {
		t.Fatalf("question.response %v", resp[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	err := c.AnswerQuestion(ctx, "", q.str("request_id"), [][]string{{"yes"}})
	if rpc := rpcErr(t, err); !strings.Contains(rpc.Message, "expired") {
		t.Errorf("answer to an expired question: %v", err)
	}
	res := p.wait()
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	if !strings.Contains(res.stderr, "asks a question ("+q.str("request_id")+") and nothing is set up to answer it; in 700ms it gets no answer") ||
		!strings.Contains(res.stderr, "asks: Proceed?") || !strings.Contains(res.stderr, "answer-question") {
		t.Errorf("stderr does not tell the person:\n%s", res.stderr)
	}
	if end := lastSessionEnd(t, readEvents(t, evPath)); end.str("final_output") != "no answer done" {
		t.Errorf("the runtime heard %q", end.str("final_output"))
	}
}

// TestQuestionAnsweredThroughFiles: with --sentinel-file the file handler
// writes <base>.question; `avenor answer --question` checks the id and the
// answers against it and writes the response the run takes (source file).
func TestQuestionAnsweredThroughFiles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath, sent := w.path("events.ndjson"), w.path("run.done")
	base := w.path("run.perm")
	p := w.start(nil, "--backend", "scripted", "--questions", "--on-event", evPath, "--sentinel-file", sent, "--prompt", askScript)
	q := waitQuestion(t, evPath)
	id := q.str("request_id")
	if q.str("resolver") != "file" {
		t.Errorf("resolver %q, want file", q.str("resolver"))
	}
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(base + ".question"); return err == nil }) {
		t.Fatalf("no %s.question", base)
	}
	if res := w.run("answer", "--question", "other", "--answer", "red", "--answer", "x", base); res.code != 2 || !strings.Contains(res.stderr, fmt.Sprintf("is %q, not %q", id, "other")) {
		t.Errorf("answer to another question: %v", res)
	}
	if res := w.run("answer", "--question", id, "--answer", "red", base); res.code != 2 || !strings.Contains(res.stderr, "2 prompt(s) but 1 answer(s)") {
		t.Errorf("too few answers: %v", res)
	}
	if res := w.run("answer", "--question", id, "--answer", `["green","red"]`, "--answer", "why not", base); res.code != 0 {
		t.Fatalf("avenor answer --question: %v", res)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	resp := only(evs, "question.response")
	if len(resp) != 1 || resp[0].str("source") != "file" || !reflect.DeepEqual(resp[0]["answers"], []any{[]any{"green", "red"}, []any{"why not"}}) {
		t.Fatalf("question.response %v", resp)
	}
	if end := lastSessionEnd(t, evs); end.str("final_output") != `answer [["green","red"],["why not"]] done` {
		t.Fatalf("the runtime heard %q", end.str("final_output"))
	}
	if _, err := os.Stat(base + ".question"); err == nil {
		t.Errorf("%s.question is left behind after the answer", base)
	}
	if res := w.run("answer", "--question", id, "--answer", "red", "--answer", "x", base); res.code != 2 || !strings.Contains(res.stderr, "no question is waiting") {
		t.Errorf("answer after the question was answered: %v", res)
	}
}

// TestQuestionAnsweredThroughMCP: an agent driving avenor mcp sees the
// question in avenor_events and answers it with avenor_answer_question
// (question.response source mcp).
func TestQuestionAnsweredThroughMCP(t *testing.T) {
	w, sock := mcpWorld(t)
	m := startMCP(t, w, sock)
	sp := m.call("avenor_spawn", map[string]any{"repo_dir": w.work, "backend": "scripted", "questions": true, "prompt": "child 30\n" + `question "Pick one" options=a|b` + "\nsay \" done\""})
	runID, _ := sp["run_id"].(string)
	var q map[string]any
	if !waitFor(20*time.Second, func() bool {
		ev := m.call("avenor_events", map[string]any{"run_id": runID, "types": []string{"question.request"}})
		evs, _ := ev["events"].([]any)
		if len(evs) == 0 {
			return false
		}
		q, _ = evs[0].(map[string]any)
		return true
	}) {
		t.Fatal("no question.request in avenor_events")
	}
	if msg := m.callErr("avenor_answer_question", map[string]any{"run_id": runID, "request_id": q["request_id"], "answers": [][]string{{"a", "b"}}}); !strings.Contains(msg, "takes one") {
		t.Errorf("two values for a single choice: %q", msg)
	}
	m.call("avenor_answer_question", map[string]any{"run_id": runID, "request_id": q["request_id"], "answers": [][]string{{"b"}}})
	res := m.call("avenor_result", map[string]any{"run_id": runID, "timeout": "60s"})
	if res["status"] != "done" || res["output"] != `answer [["b"]] done` {
		t.Fatalf("result %v", res)
	}
	ev := m.call("avenor_events", map[string]any{"run_id": runID, "types": []string{"question.response"}})
	evs, _ := ev["events"].([]any)
	if len(evs) != 1 || evs[0].(map[string]any)["source"] != "mcp" {
		t.Errorf("question.response %v", evs)
	}
}

// TestQuestionAnsweredOnTheBoard: a question of a stable runtime is
// answered through the board's /api/answer-question (question.response
// source board); an answer that does not fit is refused with the reason.
func TestQuestionAnsweredOnTheBoard(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = append(w.env, "AVENOR_QUESTIONS=true") // the supervisor's config: its runtimes hear questions
	f := w.startBoardFleet("asks", `question "Ship it?" options=yes|no`+"\nsay \" shipped\"")
	b := w.startBoardProc("tok-ask", "--allow-mutations")
	q := waitEvent(t, f.events[0], 15*time.Second, "the question", func(ev event) bool { return ev.name() == "question.request" })
	id := q.str("request_id")
	if code, body := b.call("POST", "/api/answer-question", map[string]any{"socket": f.sock, "runtime_id": f.ids[0], "request_id": id, "answers": [][]string{{"yes", "no"}}}, nil); code != 400 || !strings.Contains(body, "takes one") {
		t.Errorf("two values for a single choice: %d %s", code, body)
	}
	if code, body := b.call("POST", "/api/answer-question", map[string]any{"socket": f.sock, "runtime_id": f.ids[0], "request_id": id}, nil); code != 400 || !strings.Contains(body, "missing answers") {
		t.Errorf("no answers: %d %s", code, body)
	}
	if code, body := b.call("POST", "/api/answer-question", map[string]any{"socket": f.sock, "runtime_id": f.ids[0], "request_id": id, "answers": [][]string{{"yes"}}}, nil); code != 200 {
		t.Fatalf("answer on the board: %d %s", code, body)
	}
	end := waitEvent(t, f.events[0], 15*time.Second, "the turn's end", func(ev event) bool { return ev.name() == "session.end" })
	if end.str("final_output") != `answer [["yes"]] shipped` {
		t.Errorf("the runtime heard %q", end.str("final_output"))
	}
	resp := only(readEvents(t, f.events[0]), "question.response")
	if len(resp) != 1 || resp[0].str("source") != "board" {
		t.Errorf("question.response %v", resp)
	}
}

// TestQuestionAnsweredWithAvenorControl: `avenor control answer-question`
// answers with a JSON array of answers, or one plain-text answer; JSON that
// does not parse is refused before it is sent.
func TestQuestionAnsweredWithAvenorControl(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	p := w.start(nil, "--backend", "scripted", "--questions", "--control-socket", sock, "--on-event", evPath,
		"--prompt", "child 30\n"+`question "Name it"`+"\n"+`question "Pick" options=a|b multi=true`+"\nsay \" done\"")
	answer := func(want string, args ...string) {
		t.Helper()
		var q event
		if !waitFor(15*time.Second, func() bool {
			for _, ev := range only(readEventsQuiet(evPath), "question.request") {
				if strings.Contains(fmt.Sprint(ev["prompts"]), want) {
					q = ev
				}
			}
			return q != nil
		}) {
			t.Fatalf("no question asking %q", want)
		}
		res := w.run(append([]string{"control", "--socket", sock, "answer-question", q.str("request_id")}, args...)...)
		if res.code != 0 || !strings.Contains(res.stdout, "question answered") {
			t.Fatalf("avenor control answer-question: %v", res)
		}
	}
	if res := w.run("control", "--socket", sock, "answer-question", "x", "[not json"); res.code == 0 || !strings.Contains(res.stderr, "starts with [ but is not JSON") {
		t.Errorf("bad JSON answers: %v", res)
	}
	answer("Name it", "Fido")
	answer("Pick", `[["a","b"]]`)
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	if end := lastSessionEnd(t, readEvents(t, evPath)); end.str("final_output") != `answer [["Fido"]]answer [["a","b"]] done` {
		t.Errorf("the runtime heard %q", end.str("final_output"))
	}
}

// TestQuestionInATeam: a member of a team run (whose members' permission
// waits are serialised) asks a question; it is announced and answered over
// the control socket as in a one-shot run.
func TestQuestionInATeam(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	cfg := w.writeConfig("team.json", map[string]any{"team": []phase{
		{"name": "ask", "prompt": "child 30\n" + `question "Go on?" options=yes|no`},
		{"name": "other", "prompt": "say other"}}})
	// With a sentinel (a permission file base) the members' waits are serialised.
	p := w.start(nil, "--backend", "scripted", "--questions", "--team-file", cfg, "--dir", w.work, "--control-socket", sock, "--on-event", evPath, "--sentinel-file", w.path("run.done"))
	q := waitQuestion(t, evPath)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	if err := c.AnswerQuestion(ctx, "", q.str("request_id"), [][]string{{"yes"}}); err != nil {
		t.Fatal(err)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	resp := only(readEvents(t, evPath), "question.response")
	if len(resp) != 1 || resp[0]["answered"] != true || resp[0].str("source") != "control" {
		t.Errorf("question.response %v", resp)
	}
}

// TestQuestionNeedsTheFlag: without --questions (or the questions config
// key) a run never sees a question.request: the runtime's question gets its
// old handling (the scripted backend hears no answer, asking nothing).
func TestQuestionNeedsTheFlag(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--on-event", evPath, "--prompt", `question "Proceed?" options=yes|no`+"\nsay \" done\"")
	if res.code != 0 || strings.Contains(res.stderr, "asks a question") {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	if q := only(evs, "question.request"); len(q) != 0 {
		t.Errorf("question.request in a run that did not ask for questions: %v", q)
	}
	if end := lastSessionEnd(t, evs); end.str("final_output") != "no answer done" {
		t.Errorf("final output %q", end.str("final_output"))
	}
}
