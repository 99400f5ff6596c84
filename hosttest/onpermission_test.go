package hosttest

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// geminiLike is a permission step offering what gemini-acp offers: the
// session-wide allow first, then the one-time allow, then reject.
const geminiLike = "permission tool=bash question=\"Run make?\" options=proceed_always:allow_always,proceed_once:allow_once,cancel:reject_once\nsay after"

func TestAutoApprovePicksAllowOnce(t *testing.T) {
	w := newWorld(t)
	log := w.path("ev.ndjson")
	res := w.run("--backend", "scripted", "--prompt", geminiLike, "--auto-approve", "--on-event", log)
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("%v", res)
	}
	evs := readEvents(t, log)
	resp := only(evs, "permission.response")
	if len(resp) != 1 || resp[0].str("option_id") != "proceed_once" || resp[0].str("source") != "avenor" {
		t.Errorf("permission.response = %v; want proceed_once from avenor", resp)
	}
}

func TestOnPermissionDeny(t *testing.T) {
	w := newWorld(t)
	log := w.path("ev.ndjson")
	res := w.run("--backend", "scripted", "--prompt", geminiLike, "--on-permission", "deny", "--on-event", log)
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("%v", res)
	}
	evs := readEvents(t, log)
	req, resp := only(evs, "permission.request"), only(evs, "permission.response")
	if len(req) != 1 || req[0].str("resolver") != "automatic" {
		t.Errorf("permission.request = %v; want resolver automatic", req)
	}
	if len(resp) != 1 || resp[0].str("option_id") != "cancel" || resp[0].str("kind") != "reject" || resp[0].str("source") != "avenor" {
		t.Errorf("permission.response = %v; want the reject option from avenor", resp)
	}
}

func TestOnPermissionFail(t *testing.T) {
	w := newWorld(t)
	log, sentinel := w.path("ev.ndjson"), w.path("run.done")
	// Without --sentinel-file's file handler: a sentinel would derive one.
	res := w.run("--backend", "scripted", "--prompt", geminiLike, "--on-permission", "fail", "--on-event", log, "--max-retries", "2")
	if res.code != 1 || !strings.Contains(res.stderr, "permission request") || !strings.Contains(res.stderr, "--on-permission fail") {
		t.Fatalf("%v; want exit 1 and an error naming the request and --on-permission fail", res)
	}
	if res.elapsed > 10*time.Second {
		t.Errorf("took %v: a failed permission must not be retried", res.elapsed)
	}
	evs := readEvents(t, log)
	if n := len(only(evs, "avenor.retry")); n != 0 {
		t.Errorf("%d retries of a permission nobody can answer", n)
	}
	resp := only(evs, "permission.response")
	if len(resp) != 1 || resp[0].str("source") != "avenor" || resp[0].str("outcome") != "cancelled" {
		t.Errorf("permission.response = %v", resp)
	}
	errs := only(evs, "avenor.error")
	if len(errs) == 0 || errs[0].str("source") != "permission" {
		t.Errorf("avenor.error = %v; want source permission", errs)
	}
	if end := lastSessionEnd(t, evs); end.str("stop_reason") != "error" {
		t.Errorf("stop_reason = %q", end.str("stop_reason"))
	}
	_ = sentinel
	if res := w.run("--backend", "scripted", "--prompt", "say hi", "--on-permission", "maybe"); res.code != 1 || !strings.Contains(res.stderr, `--on-permission "maybe": want wait, deny or fail`) {
		t.Errorf("bad --on-permission: %v", res)
	}
}

// TestPermissionNoneSaysSo: a request nobody is set up to answer is said
// on stderr — what is asked, its options, how to answer — and the run keeps
// waiting as the contract says, until it is stopped.
func TestPermissionNoneSaysSo(t *testing.T) {
	w := newWorld(t)
	log := w.path("ev.ndjson")
	sock := w.path("c.sock")
	p := w.start(nil, "--backend", "scripted", "--prompt", geminiLike, "--on-event", log, "--control-socket", sock)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(log); strings.Contains(string(data), `"permission.request"`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // it waits: exit 130 below says it was still running
	p.signal(syscall.SIGINT)
	res := p.wait()
	if res.code != 130 {
		t.Errorf("exit %d after SIGINT, want 130", res.code)
	}
	for _, want := range []string{
		"avenor: permission request ", "is waiting and nothing is set up to answer it",
		"asks: Run make? (tool bash)",
		"options: proceed_always: allow_always, proceed_once: allow_once, cancel: reject_once",
		"avenor control --socket " + sock + " answer-permission ",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if n := strings.Count(res.stderr, "is waiting and nothing"); n != 1 {
		t.Errorf("the note is printed %d times, want once", n)
	}
	if res.stdout != "" {
		t.Errorf("stdout = %q", res.stdout)
	}
}

// TestOnPermissionWinsOverTheSentinelsFileHandler: --on-permission deny or
// fail, given by the user, wins over the file handler that --sentinel-file
// only implies: deny answers at once (source avenor), fail ends the run at
// once with its sentinel. An explicit --permission-handler file:<base>
// keeps the file handler first.
func TestOnPermissionWinsOverTheSentinelsFileHandler(t *testing.T) {
	w := newWorld(t)
	log, sentinel := w.path("deny.ndjson"), w.path("deny.done")
	res := w.run("--backend", "scripted", "--prompt", geminiLike, "--on-permission", "deny", "--on-event", log, "--sentinel-file", sentinel, "--timeout", "20s")
	if res.code != 0 || res.elapsed > 10*time.Second {
		t.Fatalf("deny with a sentinel: %v (in %v); want exit 0 at once", res, res.elapsed)
	}
	resp := only(readEvents(t, log), "permission.response")
	if len(resp) != 1 || resp[0].str("option_id") != "cancel" || resp[0].str("source") != "avenor" {
		t.Errorf("deny with a sentinel: permission.response = %v; want cancel from avenor", resp)
	}
	if data, _ := os.ReadFile(sentinel); !strings.HasPrefix(string(data), "DONE") {
		t.Errorf("deny with a sentinel: sentinel %q", data)
	}

	log, sentinel = w.path("fail.ndjson"), w.path("fail.done")
	res = w.run("--backend", "scripted", "--prompt", geminiLike, "--on-permission", "fail", "--on-event", log, "--sentinel-file", sentinel, "--timeout", "20s")
	if res.code != 1 || res.elapsed > 10*time.Second || !strings.Contains(res.stderr, "--on-permission fail") {
		t.Fatalf("fail with a sentinel: %v (in %v); want exit 1 at once naming --on-permission fail", res, res.elapsed)
	}
	if data, _ := os.ReadFile(sentinel); !strings.HasPrefix(string(data), "FAILED") || !strings.Contains(string(data), "EXIT_CODE=1") {
		t.Errorf("fail with a sentinel: sentinel %q", data)
	}
	if _, err := os.Stat(w.path("fail.perm.req")); err == nil {
		t.Errorf("fail with a sentinel: a .req was written")
	}

	// An explicit file handler stays first: the .req appears and its answer decides.
	log, sentinel = w.path("file.ndjson"), w.path("file.done")
	base := w.path("answers")
	p := w.start(nil, "--backend", "scripted", "--prompt", geminiLike, "--on-permission", "fail", "--on-event", log,
		"--sentinel-file", sentinel, "--permission-handler", "file:"+base, "--timeout", "20s")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(base + ".req"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no %s.req with an explicit --permission-handler", base)
		}
	}
	if res := w.run("answer", "--option", "proceed_once", base); res.code != 0 {
		t.Fatalf("avenor answer: %v", res)
	}
	if res := p.wait(); res.code != 0 {
		t.Fatalf("explicit handler: %v", res)
	}
	if resp := only(readEvents(t, log), "permission.response"); len(resp) != 1 || resp[0].str("source") != "file" {
		t.Errorf("explicit handler: permission.response = %v; want source file", resp)
	}
}
