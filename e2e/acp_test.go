//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/e2e/fakellm"
)

// avenorRun is one `avenor run` with the flags a harness passes: --backend,
// --dir, --on-event and --sentinel-file, plus the scenario's own.
type avenorRun struct {
	w                          *world
	p                          *proc
	label                      string
	events, sentinel, permBase string
}

func (w *world) startAvenor(label string, extra ...string) *avenorRun {
	w.t.Helper()
	r := &avenorRun{w: w, label: label, events: w.path(label + ".events.ndjson"), sentinel: w.path(label + ".done"),
		permBase: w.path(label + ".perm")}
	args := append([]string{"--backend", w.rt.backend, "--dir", w.work, "--on-event", r.events,
		"--sentinel-file", r.sentinel}, extra...)
	r.p = w.start(args...)
	// On failure, show what a harness would look at.
	w.t.Cleanup(func() {
		if !w.t.Failed() {
			return
		}
		r.p.cancel()
		res := r.p.wait()
		ev, _ := os.ReadFile(r.events)
		sen, _ := os.ReadFile(r.sentinel)
		w.t.Logf("%s: %v\n--- events\n%s--- sentinel\n%s", r.label, res, tail(string(ev), 8000), sen)
	})
	return r
}

// finish waits for avenor, checks that nothing it started outlives it,
// and reads the event log and the sentinel.
func (r *avenorRun) finish() (result, []event, sentinel) {
	t := r.w.t
	t.Helper()
	res := r.p.wait()
	r.p.checkNoLeftovers()
	if !fileExists(r.events) {
		t.Fatalf("%s: no event log\n%v", r.label, res)
	}
	evs := readEvents(t, r.events)
	if !fileExists(r.sentinel) {
		t.Fatalf("%s: no sentinel\n%v\nevents: %v", r.label, res, names(evs))
	}
	return res, evs, readSentinel(t, r.sentinel)
}

// checkDone checks a run that ended its turn cleanly: exit 0, a DONE
// sentinel naming the session, session.end{end_turn} as the last event.
func checkDone(t *testing.T, label string, res result, evs []event, s sentinel) {
	t.Helper()
	if res.code != 0 {
		t.Errorf("%s: %v", label, res)
	}
	if s.status != "DONE" || s.fields["STOP_REASON"] != "end_turn" || s.session == "" {
		t.Errorf("%s: sentinel %q, want DONE with a session and STOP_REASON=end_turn", label, s.raw)
	}
	checkSessionEnd(t, label, evs, "end_turn")
}

func checkSessionEnd(t *testing.T, label string, evs []event, stop string) event {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].name() != "session.end" {
		t.Errorf("%s: the last event is not session.end: %v", label, names(evs))
		return nil
	}
	end := evs[len(evs)-1]
	if got := end.str("stop_reason"); got != stop {
		t.Errorf("%s: session.end stop_reason %q, want %q: %v", label, got, stop, end)
	}
	return end
}

// checkPermission checks the one permission round trip of a run: a
// tool.call, then one permission.request, then a permission.response of
// the given kind from source.
func checkPermission(t *testing.T, label string, evs []event, kind, source string) {
	t.Helper()
	reqs, resps := only(evs, "permission.request"), only(evs, "permission.response")
	if len(reqs) != 1 || len(resps) != 1 {
		t.Errorf("%s: %d permission.request and %d permission.response events, want 1 each: %v", label, len(reqs), len(resps), names(evs))
		return
	}
	if reqs[0].str("request_id") == "" {
		t.Errorf("%s: permission.request without request_id: %v", label, reqs[0])
	}
	if opts, _ := reqs[0]["options"].([]any); len(opts) == 0 {
		t.Errorf("%s: permission.request without options: %v", label, reqs[0])
	}
	if got := resps[0].str("kind"); got != kind {
		t.Errorf("%s: permission.response kind %q, want %q: %v", label, got, kind, resps[0])
	}
	if got := resps[0].str("source"); got != source {
		t.Errorf("%s: permission.response source %q, want %q: %v", label, got, source, resps[0])
	}
	if resps[0].str("request_id") != reqs[0].str("request_id") {
		t.Errorf("%s: permission.response request_id %q, request %q", label, resps[0].str("request_id"), reqs[0].str("request_id"))
	}
	calls := only(evs, "tool.call")
	if len(calls) == 0 {
		t.Errorf("%s: no tool.call event before the permission request: %v", label, names(evs))
	}
}

func checkOutFile(t *testing.T, w *world, want bool) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(w.work, "out.txt"))
	switch {
	case want && (err != nil || string(got) != "hello\n"):
		t.Errorf("out.txt = %q, %v; want \"hello\\n\" (the tool ran)", got, err)
	case !want && err == nil:
		t.Errorf("out.txt exists (%q): the tool ran although it was rejected", got)
	}
}

// TestAvenor drives the built avenor with --backend opencode-acp and
// gemini-acp through the harness scenarios of the ACP backends.
func TestAvenor(t *testing.T) {
	for _, rt := range runtimes {
		t.Run(rt.backend, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(bins.dir, "avenor-plugin-"+rt.name)); err != nil {
				t.Fatalf("the %s plugin is not built: %v", rt.backend, err)
			}
			t.Run("allow/auto-approve", func(t *testing.T) { testAllowAuto(t, rt) })
			t.Run("allow/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "allow") })
			t.Run("reject/permission-file", func(t *testing.T) { testPermissionFile(t, rt, "reject") })
			t.Run("cancel", func(t *testing.T) { testCancel(t, rt) })
			t.Run("resume", func(t *testing.T) { testResume(t, rt) })
			t.Run("model", func(t *testing.T) { testModel(t, rt) })
		})
	}
}

func testAllowAuto(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkPermission(t, "run", evs, "allow", "avenor")
	checkOutFile(t, w, true)
	checkModelRequests(t, w, rt.model)
	if starts := only(evs, "session.start"); len(starts) != 1 || starts[0].str("backend") != rt.backend {
		t.Errorf("session.start events %v, want one with backend %q", starts, rt.backend)
	}
	if !strings.Contains(finalText(evs), "DONE") {
		t.Errorf("the model's final text DONE is not in the agent.message_chunk events / final_output: %q", finalText(evs))
	}
}

// finalText is session.end's final_output, else the message chunks' text.
func finalText(evs []event) string {
	if n := len(evs); n > 0 && evs[n-1].str("final_output") != "" {
		return evs[n-1].str("final_output")
	}
	var b strings.Builder
	for _, ev := range only(evs, "agent.message_chunk") {
		if c, ok := ev["content"].(map[string]any); ok {
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// permissionFile is the .req the file handler writes (docs/permission-handler.md#the-file-handler).
type permissionFile struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Tool      string `json:"tool"`
	Options   []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// testPermissionFile answers the permission through the file protocol, with
// `avenor answer`, as a harness does: the first option of the wanted
// kind (allow or reject).
func testPermissionFile(t *testing.T, rt *runtimeSpec, kind string) {
	w := newWorld(t, rt, fakellm.Config{})
	run := w.startAvenor("run", "--prompt", shellPrompt)
	reqPath := run.permBase + ".req"
	if !waitFor(2*time.Minute, func() bool { return fileExists(reqPath) || run.p.ended() }) || !fileExists(reqPath) {
		res := run.p.wait()
		t.Fatalf("no %s was written\n%v", reqPath, res)
	}
	var req permissionFile
	b, err := os.ReadFile(reqPath)
	if err != nil || json.Unmarshal(b, &req) != nil {
		t.Fatalf("reading %s: %v\n%s", reqPath, err, b)
	}
	if req.RequestID == "" || len(req.Options) == 0 {
		t.Errorf("%s lacks request_id or options:\n%s", reqPath, b)
	}
	// A harness answers once: allow_once / reject_once, else any option
	// of the kind.
	option := ""
	for _, o := range req.Options {
		k := strings.ToLower(o.Kind)
		if k == kind+"_once" || (option == "" && strings.HasPrefix(k, kind)) {
			option = o.OptionID
		}
	}
	if option == "" {
		t.Fatalf("%s offers no %s option:\n%s", reqPath, kind, b)
	}
	answer := exec.Command(bins.avenor, "answer", "--option", option, run.permBase)
	answer.Env = w.env
	if out, err := answer.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer --option %s %s: %v\n%s", option, run.permBase, err, out)
	}
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	checkPermission(t, "run", evs, kind, "file")
	checkOutFile(t, w, kind == "allow")
	if req.SessionID != "" && req.SessionID != s.session {
		t.Errorf(".req session_id %q, sentinel SESSION %q", req.SessionID, s.session)
	}
}

// testCancel interrupts avenor (SIGINT) while the model streams slowly:
// exit 130, a KILLED sentinel, session.end{cancelled}, nothing left
// running, and the model stream abandoned.
func testCancel(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{Script: func(*fakellm.Request) fakellm.Reply {
		return fakellm.Slow(1200, 100*time.Millisecond)
	}})
	run := w.startAvenor("run", "--prompt", "Count slowly to a thousand.", "--auto-approve")
	if !waitFor(2*time.Minute, func() bool {
		b, _ := os.ReadFile(run.events)
		return strings.Contains(string(b), `"agent.message_chunk"`) || run.p.ended()
	}) {
		t.Fatalf("no agent.message_chunk within 2 min")
	}
	if run.p.ended() {
		t.Fatalf("avenor ended before the cancel\n%v", run.p.wait())
	}
	sent := time.Now()
	if err := run.p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	res, evs, s := run.finish()
	t.Logf("avenor exited %v after SIGINT", time.Since(sent).Round(time.Millisecond))
	if res.code != 130 {
		t.Errorf("exit code %d, want 130\n%v", res.code, res)
	}
	if s.status != "KILLED" || s.fields["STOP_REASON"] != "cancelled" || s.fields["EXIT_CODE"] != "130" {
		t.Errorf("sentinel %q, want KILLED, STOP_REASON=cancelled, EXIT_CODE=130", s.raw)
	}
	checkSessionEnd(t, "run", evs, "cancelled")
	if d := time.Since(sent); d > 15*time.Second {
		t.Errorf("avenor took %v to end after SIGINT", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if !w.llm.Wait(ctx, func(rs []*fakellm.Request) bool {
		for _, r := range rs {
			if !r.Side && r.Aborted {
				return true
			}
		}
		return false
	}) {
		t.Errorf("the slow model stream was not abandoned: the runtime kept reading it")
	}
}

// testResume runs a first turn, then resumes its session in a second avenor
// run: the model must see the first turn's messages, and the second run's
// events must not replay the first turn.
func testResume(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	run1 := w.startAvenor("run1", "--prompt", shellPrompt, "--auto-approve")
	res, evs, s1 := run1.finish()
	checkDone(t, "run1", res, evs, s1)
	checkOutFile(t, w, true)
	if s1.session == "" {
		t.Fatal("run1: no session id to resume")
	}

	const second = "This is the second turn: say what you did."
	w.llm.Reset()
	w.llm.SetScript(func(r *fakellm.Request) fakellm.Reply {
		if strings.Contains(r.LastUserText(), "second turn") {
			return fakellm.Text("SECOND DONE")
		}
		return fakellm.Fail(400, "fakellm: the resumed turn's request does not end with the second prompt")
	})
	run2 := w.startAvenor("run2", "--resume", s1.session, "--prompt", second, "--auto-approve")
	res, evs, s2 := run2.finish()
	if res.code != 0 && knownLoadBug(rt, res.stderr) {
		// The CLI cannot resume (reproduced without avenor in
		// TestDirect/gemini/resume); avenor must still fail cleanly and say why.
		if res.code != 1 || s2.status != "FAILED" || s2.fields["STOP_REASON"] != "error" {
			t.Errorf("run2 on the CLI's resume failure: %v\nsentinel %q, want exit 1 and FAILED/error", res, s2.raw)
		}
		checkSessionEnd(t, "run2", evs, "error")
		errs := only(evs, "avenor.error")
		if len(errs) == 0 || !strings.Contains(errs[0].str("message"), "session/load") {
			t.Errorf("run2: no avenor.error naming session/load: %v", errs)
		}
		t.Skipf("KNOWN CLI BUG, not avenor's: %s; avenor failed cleanly: %s", geminiLoadBug, strings.TrimSpace(res.stderr))
	}
	checkDone(t, "run2", res, evs, s2)
	if s2.session != s1.session {
		t.Errorf("run2 sentinel SESSION %q, want the resumed %q", s2.session, s1.session)
	}
	main := w.llm.MainRequests()
	if len(main) == 0 {
		t.Fatal("run2 made no model request")
	}
	r := main[0]
	for _, want := range []string{shellPrompt, fakellm.DefaultCommand, second} {
		if !r.Contains(want) {
			t.Errorf("run2's model request lacks %q from the conversation; messages:\n%s", want, summarize(r.Messages))
		}
	}
	if !r.Contains("DONE") {
		t.Errorf("run2's model request lacks the first turn's final answer DONE; messages:\n%s", summarize(r.Messages))
	}
	if calls := only(evs, "tool.call"); len(calls) > 0 {
		t.Errorf("run2 emitted %d tool.call events: the first turn's history was replayed as live events: %v", len(calls), calls)
	}
	if got := finalText(evs); !strings.Contains(got, "SECOND DONE") || strings.Contains(strings.ReplaceAll(got, "SECOND DONE", ""), "DONE") {
		t.Errorf("run2's final text %q, want only the second turn's SECOND DONE", got)
	}
}

// testModel checks --model: opencode must ask the fake LLM for the selected
// model; gemini applies it through session/set_model where offered, or says
// it did not (docs/backends.md#gemini-acp-plugin-gemini).
func testModel(t *testing.T, rt *runtimeSpec) {
	w := newWorld(t, rt, fakellm.Config{})
	model, wantID := "fake/fake-model-2", "fake-model-2"
	if rt == gemini {
		model, wantID = "gemini-2.5-pro", "gemini-2.5-pro"
	}
	run := w.startAvenor("run", "--prompt", shellPrompt, "--auto-approve", "--model", model)
	res, evs, s := run.finish()
	checkDone(t, "run", res, evs, s)
	main := w.llm.MainRequests()
	if len(main) == 0 {
		t.Fatal("no model request")
	}
	applied := true
	for _, r := range main {
		if r.Model != wantID {
			applied = false
			if rt != gemini {
				t.Errorf("--model %s: request #%d asked for model %q, want %q", model, r.Seq, r.Model, wantID)
			}
		}
	}
	t.Logf("--model %s applied: %v (model requests asked for %q)", model, applied, main[0].Model)
	if rt == gemini && !applied {
		warned := false
		for _, ev := range only(evs, "avenor.warning") {
			warned = warned || strings.Contains(ev.str("message"), "model")
		}
		if !warned {
			t.Errorf("--model %s was neither applied (requests asked for %q) nor reported by an avenor.warning (docs/backends.md#gemini-acp-plugin-gemini)", model, main[0].Model)
		}
	}
}

// summarize is one short line per message.
func summarize(msgs []fakellm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "  %s: %q", m.Role, truncateLine(m.Text, 80))
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, " call %s %v", c.Name, c.Args)
		}
		for _, r := range m.ToolResults {
			fmt.Fprintf(&b, " result %q", truncateLine(r.Output, 80))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
