package hosttest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// recoverRun starts a run under --sandbox workspace --sandbox-recover
// whose first turn writes outside --dir (denied) and whose resumed turn
// (the restart's note, not a script) writes there again; it answers the
// sandbox request with option through the control socket and returns the
// run's result, its events and the file it writes.
func recoverRun(t *testing.T, option string) (result, []event, string) {
	t.Helper()
	requireSandbox(t)
	w := newWorld(t)
	home, _, outside := plantSecret(t)
	target := filepath.Join(outside, "out.txt")
	sock, evPath, sent := w.path("c.sock"), w.path("events.ndjson"), w.path("run.done")
	env := []string{"HOME=" + home, "SCRIPTED_PROSE_SCRIPT=announce\ntoolsh echo second > " + target + " && echo wrote\nsay resumed"}
	p := w.start(env, "--backend", "scripted", "--run-id", "rec", "--dir", w.work, "--control-socket", sock,
		"--on-event", evPath, "--sentinel-file", sent, "--sandbox", "workspace", "--sandbox-recover",
		"--prompt", "announce\ntoolsh echo first > "+target+"\nsay denied")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	req := awaitSandboxRequest(t, evPath, p)
	if req.str("op") != "write" || req.str("path") != target || req.str("allow_write") != outside || req["requires_user_input"] != true {
		t.Errorf("sandbox request %v; want op write, path %s, allow_write %s, requires_user_input", req, target, outside)
	}
	if err := c.AnswerPermission(ctx, req.str("request_id"), option, ""); err != nil {
		t.Fatalf("answer %s: %v", option, err)
	}
	res := p.wait()
	return res, readEvents(t, evPath), target
}

// awaitSandboxRequest is the run's first permission request of kind
// sandbox, within 30 s; without one the run is killed and the test fails
// with its events.
func awaitSandboxRequest(t *testing.T, evPath string, p *proc) event {
	t.Helper()
	var req event
	if !waitFor(30*time.Second, func() bool {
		for _, ev := range only(readEventsIfAny(t, evPath), "permission.request") {
			if ev.str("kind") == "sandbox" {
				req = ev
				return true
			}
		}
		return false
	}) {
		p.signal(9)
		for _, ev := range readEventsIfAny(t, evPath) {
			t.Logf("%v", ev)
		}
		t.Fatalf("no permission request of kind sandbox")
	}
	return req
}

// TestSandboxRecoverApproved: a write the sandbox denied is put to a
// person as a permission request of kind sandbox when the turn ends;
// approved through the control socket, the run restarts (reason
// sandbox_widened) on the same session with the file's directory
// writable, the resumed turn's write lands, and the run ends once, DONE.
func TestSandboxRecoverApproved(t *testing.T) {
	t.Parallel()
	res, evs, target := recoverRun(t, "allow")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "second\n" {
		t.Errorf("%s after the approval: %q, %v; want the resumed turn's write", target, got, err)
	}
	starts := only(evs, "session.start")
	if len(starts) != 2 || starts[0].str("session_id") == "" || starts[1].str("session_id") != starts[0].str("session_id") {
		t.Fatalf("session.start %v; want two on the same session", starts)
	}
	widened := only(evs, "avenor.sandbox.widened")
	if len(widened) != 1 || widened[0].str("op") != "write" || widened[0].str("path") != target ||
		widened[0].str("allow_write") != filepath.Dir(target) || widened[0].str("session_id") != starts[0].str("session_id") {
		t.Fatalf("avenor.sandbox.widened %v; want one naming the path, its directory and the session", widened)
	}
	restarted := only(evs, "avenor.restarted")
	if len(restarted) != 1 || restarted[0].str("reason") != "sandbox_widened" {
		t.Fatalf("avenor.restarted %v; want one, reason sandbox_widened", restarted)
	}
	// In order: denied, request, response, widened, restarted, the fresh
	// session.start; one session.end, the resumed turn's.
	order := []string{"avenor.sandbox.denied", "permission.request", "permission.response", "avenor.sandbox.widened", "avenor.restarted", "session.start"}
	at := 0
	for _, ev := range evs[indexOf(evs, "session.start")+1:] {
		if at < len(order) && ev.name() == order[at] {
			at++
		}
	}
	if at != len(order) {
		t.Errorf("events %v; want %v in order", names(evs, "agent.status"), order)
	}
	if ends := only(evs, "session.end"); len(ends) != 1 || ends[0].str("stop_reason") != "end_turn" || ends[0].str("final_output") != "resumed" {
		t.Errorf("session.end %v; want one, the resumed turn's, end_turn", ends)
	}
	if d := only(evs, "avenor.sandbox.denied"); len(d) != 1 {
		t.Errorf("denied %v; want only the first turn's", d)
	}
	logRecovery(t, evs)
}

// indexOf is the index of the first event named name, -1 when none.
func indexOf(evs []event, name string) int {
	for i, ev := range evs {
		if ev.name() == name {
			return i
		}
	}
	return -1
}

// logRecovery logs the recovery's time: from the denial, and from the
// approval, to the fresh turn's session.start.
func logRecovery(t *testing.T, evs []event) {
	t.Helper()
	ts := func(name string, nth int) time.Time {
		for _, ev := range evs {
			if ev.name() == name {
				if nth == 0 {
					ms, _ := ev.num("ts")
					return time.UnixMilli(int64(ms))
				}
				nth--
			}
		}
		return time.Time{}
	}
	fresh := ts("session.start", 1)
	t.Logf("recovery: denial → fresh session.start %s; approval → fresh session.start %s",
		fresh.Sub(ts("avenor.sandbox.denied", 0)), fresh.Sub(ts("permission.response", 0)))
}

// TestSandboxRecoverRejected: a sandbox request rejected leaves the turn
// denied: no widening, no restart, one session, the file never written.
func TestSandboxRecoverRejected(t *testing.T) {
	t.Parallel()
	res, evs, target := recoverRun(t, "reject")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a rejection (%v)", target, err)
	}
	for _, name := range []string{"avenor.sandbox.widened", "avenor.restarted"} {
		if got := only(evs, name); len(got) != 0 {
			t.Errorf("%s after a rejection: %v", name, got)
		}
	}
	if n := len(only(evs, "session.start")); n != 1 {
		t.Errorf("%d session.start after a rejection, want 1", n)
	}
	resp := only(evs, "permission.response")
	if len(resp) != 1 || resp[0].str("kind") != "reject" {
		t.Errorf("permission.response %v; want the rejection", resp)
	}
	if end := lastSessionEnd(t, evs); end.str("stop_reason") != "end_turn" || end.str("final_output") != "denied" {
		t.Errorf("session.end %v; want the first turn's, ended as it was", end)
	}
}

// TestSandboxRecoverBadInput: --sandbox-recover without a sandbox, under
// read-only, and on a backend that resumes a session only in the plugin
// process that holds it is refused before anything starts, naming the
// problem — on avenor run and on a stable spawn.
func TestSandboxRecoverBadInput(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	inProcess := []string{"SCRIPTED_RESUME_SCOPE=in_process"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no sandbox", nil, []string{"--sandbox-recover"}, "--sandbox-recover needs --sandbox workspace: it widens a sandbox after a denial, and no sandbox was asked"},
		{"read-only", nil, []string{"--sandbox", "read-only", "--sandbox-recover"}, "--sandbox-recover needs --sandbox workspace: under read-only nothing is ever writable"},
		{"no resume", inProcess, []string{"--sandbox", "workspace", "--sandbox-recover"}, "--sandbox-recover: the backend cannot resume a session in a fresh plugin process: backend scripted continues a session only inside the plugin process that holds it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evPath, sentPath := w.path(tc.name+".ndjson"), w.path(tc.name+".done")
			args := append([]string{"--backend", "scripted", "--dir", w.work, "--prompt", "say hi", "--on-event", evPath, "--sentinel-file", sentPath}, tc.args...)
			res := w.runEnv(tc.env, args...)
			if res.code != 1 || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("want exit 1 saying %q; got %v", tc.want, res)
			}
			if s := readFile(t, sentPath); !strings.HasPrefix(s, "FAILED\n") {
				t.Errorf("sentinel %q, want FAILED", s)
			}
			for _, ev := range readEventsIfAny(t, evPath) {
				if ev.name() == "session.start" || ev.name() == "avenor.turn.start" {
					t.Errorf("%s was written: something started", ev.name())
				}
			}
		})
	}

	s := w.startStable("st", inProcess)
	c := s.client()
	yes := true
	_, err := c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi", SandboxRecover: &yes})
	var re *client.RPCError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "sandbox_recover needs sandbox workspace") {
		t.Errorf("spawn with sandbox_recover and no sandbox: %v, want a refusal naming both", err)
	}
	_, err = c.Spawn(ctxT(t, 10*time.Second), client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say hi", Sandbox: "workspace", SandboxRecover: &yes})
	if !errors.As(err, &re) || !strings.Contains(re.Message, "backend scripted continues a session only inside the plugin process") || !strings.Contains(re.Message, "nothing was started") {
		t.Errorf("spawn with sandbox_recover on an in-process backend: %v, want a refusal naming the backend", err)
	}
	res := w.run("control", "--socket", s.sock, "spawn", "--backend", "scripted", "--prompt", "say hi", "--sandbox-recover")
	if res.code == 0 || !strings.Contains(res.stderr, "sandbox_recover needs sandbox workspace") {
		t.Errorf("avenor control spawn --sandbox-recover: %v, want a refusal naming it", res)
	}
	if l, err := c.List(ctxT(t, 5*time.Second)); err != nil || len(l) != 0 {
		t.Errorf("after refused spawns the supervisor lists %d runtimes (%v), want none", len(l), err)
	}
}

// TestSandboxRecoverStable: a stable spawn with sandbox_recover raises the
// same request; approved with answer_permission naming the runtime, the
// runtime goes on in a fresh process on the same session with the
// directory writable, its write lands, and it ends its turn idle.
func TestSandboxRecoverStable(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	home, _, outside := plantSecret(t)
	target := filepath.Join(outside, "out.txt")
	s := w.startStable("st", []string{"HOME=" + home, "SCRIPTED_PROSE_SCRIPT=toolsh echo second > " + target + "\nsay resumed"})
	c := s.client()
	yes := true
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Sandbox: "workspace", SandboxRecover: &yes,
		Prompt: "toolsh echo first > " + target + "\nsay denied"})
	rt := waitRuntime(t, c, sp.RuntimeID, 30*time.Second, "a pending permission", func(rt client.Runtime) bool { return rt.PendingPermission })
	var req event
	for _, ev := range only(readEvents(t, rt.EventPath), "permission.request") {
		if ev.str("kind") == "sandbox" {
			req = ev
		}
	}
	if req.str("allow_write") != outside {
		t.Fatalf("sandbox request %v; want allow_write %s", req, outside)
	}
	if err := c.AnswerPermission(ctxT(t, 10*time.Second), req.str("request_id"), "allow", "", sp.RuntimeID); err != nil {
		t.Fatal(err)
	}
	var evs []event
	if !waitFor(30*time.Second, func() bool {
		evs = readEventsQuiet(rt.EventPath)
		return len(only(evs, "session.end")) > 0
	}) {
		t.Fatalf("the resumed turn never ended: %v", names(evs, "agent.status"))
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "second\n" {
		t.Errorf("%s after the approval: %q, %v; want the resumed turn's write", target, got, err)
	}
	starts := only(evs, "session.start")
	if len(starts) != 2 || starts[1].str("session_id") != starts[0].str("session_id") {
		t.Errorf("session.start %v; want two on the same session", starts)
	}
	if ends := only(evs, "session.end"); len(ends) != 1 || ends[0].str("final_output") != "resumed" {
		t.Errorf("session.end %v; want one, the resumed turn's", ends)
	}
	waitRuntime(t, c, sp.RuntimeID, 20*time.Second, "idle", func(rt client.Runtime) bool { return rt.Status == "idle" })
}

// TestSandboxRecoverFileHandler: with no control client, the sandbox
// request goes to the file handler (<base>.req, its payload naming the
// path and what becomes writable); `avenor answer --option allow`
// approves it and the resumed turn's write lands.
func TestSandboxRecoverFileHandler(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	w := newWorld(t)
	home, _, outside := plantSecret(t)
	target := filepath.Join(outside, "out.txt")
	evPath, sent := w.path("events.ndjson"), w.path("run.done")
	base := w.path("run.perm")
	env := []string{"HOME=" + home, "SCRIPTED_PROSE_SCRIPT=toolsh echo second > " + target + "\nsay resumed"}
	p := w.start(env, "--backend", "scripted", "--dir", w.work, "--on-event", evPath, "--sentinel-file", sent,
		"--sandbox", "workspace", "--sandbox-recover", "--prompt", "toolsh echo first > "+target+"\nsay denied")
	var req string
	if !waitFor(30*time.Second, func() bool {
		b, err := os.ReadFile(base + ".req")
		req = string(b)
		return err == nil && strings.Contains(req, `"kind": "sandbox"`)
	}) {
		p.signal(9)
		t.Fatalf("no sandbox request in %s.req: %q", base, req)
	}
	if !strings.Contains(req, `"allow_write": "`+outside+`"`) || !strings.Contains(req, `"path": "`+target+`"`) {
		t.Errorf("%s.req %s; want the path and what becomes writable", base, req)
	}
	if res := w.run("answer", "--option", "allow", base); res.code != 0 {
		t.Fatalf("avenor answer: %v", res)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "second\n" {
		t.Errorf("%s after the approval: %q, %v; want the resumed turn's write", target, got, err)
	}
	evs := readEvents(t, evPath)
	if resp := only(evs, "permission.response"); len(resp) != 1 || resp[0].str("source") != "file" {
		t.Errorf("permission.response %v; want the file handler's", resp)
	}
	if n := len(only(evs, "avenor.sandbox.widened")); n != 1 {
		t.Errorf("%d avenor.sandbox.widened, want 1", n)
	}
}

// TestSandboxRecoverConnectApproved: under --sandbox-network
// allow=127.0.0.1:P a connection to another loopback port is refused by
// the filtering proxy; with --sandbox-recover it is put to a person as a
// request of kind sandbox naming the destination, and approved, the run
// restarts on the same session with exactly that host:port added to the
// list: the resumed turn reaches it.
func TestSandboxRecoverConnectApproved(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	requireCurl(t)
	w := newWorld(t)
	port, other := twoServers(t)
	dest := "127.0.0.1:" + other
	curl := "toolsh curl -s --max-time 30 -o /dev/null -w 'code=%{http_code}' http://" + dest + "/"
	sock, evPath := w.path("c.sock"), w.path("events.ndjson")
	env := []string{"SCRIPTED_PROSE_SCRIPT=announce\n" + curl + "\nsay resumed"}
	p := w.start(env, "--backend", "scripted", "--run-id", "recnet", "--dir", w.work, "--control-socket", sock,
		"--on-event", evPath, "--sandbox", "workspace", "--sandbox-network", "allow=127.0.0.1:"+port, "--sandbox-recover",
		"--prompt", "announce\n"+curl+"\nsay denied")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dialControl(t, ctx, sock)
	req := awaitSandboxRequest(t, evPath, p)
	if req.str("op") != "connect" || req.str("destination") != dest {
		t.Errorf("sandbox request %v; want op connect, destination %s", req, dest)
	}
	if err := c.AnswerPermission(ctx, req.str("request_id"), "allow", ""); err != nil {
		t.Fatalf("answer: %v", err)
	}
	res := p.wait()
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	evs := readEvents(t, evPath)
	if got := toolOutputs(evs); strings.Join(got, "|") != "code=403|code=200" {
		t.Errorf("tool outputs %q; want the refusal, then the resumed turn reaching %s", got, dest)
	}
	starts := only(evs, "session.start")
	if len(starts) != 2 || starts[1].str("session_id") != starts[0].str("session_id") {
		t.Fatalf("session.start %v; want two on the same session", starts)
	}
	sb, _ := starts[1]["sandbox"].(map[string]any)
	if want := "allow=127.0.0.1:" + port + "," + dest; sb["network"] != want {
		t.Errorf("the resumed turn's network %v; want %s (the one destination approved, nothing more)", sb["network"], want)
	}
	widened := only(evs, "avenor.sandbox.widened")
	if len(widened) != 1 || widened[0].str("op") != "connect" || widened[0].str("destination") != dest || widened[0]["path"] != nil {
		t.Errorf("avenor.sandbox.widened %v; want one naming %s", widened, dest)
	}
	logRecovery(t, evs)
}
