package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// e2eBins finds the built avenor and scripted plugin: $AVENOR_TEST_BIN
// (what `make test` passes), else a fresh build into a temporary directory.
var e2eBins struct {
	once sync.Once
	dir  string
	err  error
}

func builtBinaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the avenor binary")
	}
	e2eBins.once.Do(func() {
		if d := os.Getenv("AVENOR_TEST_BIN"); d != "" {
			e2eBins.dir, e2eBins.err = filepath.Abs(d)
			return
		}
		// One fixed directory, rebuilt each run: no test owns a cleanup
		// for a build shared by all of them, so it must not pile up.
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("avenor-control-e2e-%d", os.Getuid()))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e2eBins.err = err
			return
		}
		e2eBins.dir = dir
		for _, b := range []struct{ wd, out, pkg string }{
			{".", "avenor", "."},
			{"../../sdk", "avenor-plugin-scripted", "./plugintest/scripted/cmd/avenor-plugin-scripted"},
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
			cmd.Dir = b.wd
			if out, err := cmd.CombinedOutput(); err != nil {
				e2eBins.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if e2eBins.err != nil {
		t.Fatal(e2eBins.err)
	}
	return e2eBins.dir
}

// e2eWorld is an isolated environment for avenor processes.
type e2eWorld struct {
	t    *testing.T
	bin  string
	dir  string
	env  []string
	sock string
}

func newE2EWorld(t *testing.T) *e2eWorld {
	bin := builtBinaries(t)
	dir := t.TempDir()
	w := &e2eWorld{t: t, bin: bin, dir: dir, sock: filepath.Join(dir, "ctl", "run.sock")}
	w.env = []string{
		"HOME=" + filepath.Join(dir, "home"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"XDG_STATE_HOME=" + filepath.Join(dir, "state"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir,
		"AVENOR_PLUGIN_PATH=" + bin, "PATH=/usr/bin:/bin",
	}
	return w
}

// avenorProc is a running avenor.
type avenorProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan struct{}
	code   int
}

// start runs avenor with args in its own process group; extra is added to
// the environment; ready, when set, is inherited as fd 3.
func (w *e2eWorld) start(extra []string, ready *os.File, args ...string) *avenorProc {
	w.t.Helper()
	p := &avenorProc{done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(w.bin, "avenor"), args...)
	p.cmd.Dir = w.dir
	p.cmd.Env = append(append([]string{}, w.env...), extra...)
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if ready != nil {
		p.cmd.ExtraFiles = []*os.File{ready}
	}
	if err := p.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	w.t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

func (p *avenorProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(d):
		t.Fatalf("avenor did not exit within %v; stderr:\n%s", d, p.stderr.String())
	}
	return -1
}

// startRun starts `avenor run --control-socket` and waits for its ready byte.
func (w *e2eWorld) startRun(prompt string, extra ...string) *avenorProc {
	w.t.Helper()
	r, wr, err := os.Pipe()
	if err != nil {
		w.t.Fatal(err)
	}
	defer r.Close()
	p := w.start(append([]string{"AVENOR_CONTROL_READY_FD=3"}, extra...), wr,
		"run", "--backend", "scripted", "--prompt", prompt, "--control-socket", w.sock,
		"--on-event", filepath.Join(w.dir, "events.ndjson"), "--sentinel-file", filepath.Join(w.dir, "run.done"))
	wr.Close()
	got := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := r.Read(b)
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			w.t.Fatalf("no ready byte: %v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		w.t.Fatalf("no ready byte; stderr:\n%s", p.stderr.String())
	}
	return p
}

// until reads sub until an event satisfies ok.
func until(t *testing.T, sub *client.Subscription, what string, ok func(ev client.Event, f map[string]any) bool) client.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, open := <-sub.C():
			if !open {
				t.Fatalf("subscription ended before %s", what)
			}
			f, _ := ev.Fields()
			if ok(ev, f) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s", what)
		}
	}
}

func chunk(text string) func(client.Event, map[string]any) bool {
	return func(ev client.Event, f map[string]any) bool {
		c, _ := f["content"].(map[string]any)
		return ev.Name == "agent.message_chunk" && c["text"] == text
	}
}

func TestControlSocketEndToEnd(t *testing.T) {
	noLeaks(t)
	w := newE2EWorld(t)
	ctx := context.Background()
	p := w.startRun("say hi\nsleep 5s", "AVENOR_CONTROL_IDENTITY_TOKEN=tok-e2e")

	st, err := os.Lstat(w.sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", st, err)
	}
	owner, err := client.Dial(ctx, w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if tok, err := owner.Identity(ctx); err != nil || tok != "tok-e2e" {
		t.Fatalf("identity = %q, %v", tok, err)
	}
	sub, err := owner.Subscribe(ctx, client.SubscribeOptions{Replay: true})
	if err != nil {
		t.Fatal(err)
	}
	hi := until(t, sub, `the "hi" chunk`, chunk("hi"))

	// Status during the turn.
	status, err := owner.Status(ctx)
	if err != nil || status.TurnState != "running" || status.SessionID == "" || status.LatestSeq < hi.Seq {
		t.Fatalf("status during the turn: %+v, %v", status, err)
	}
	code, out, errOut := runBinary(w, "control", "--socket", w.sock, "status")
	if code != 0 || !strings.Contains(out, "\n  \"turn_state\": \"running\",\n") {
		t.Fatalf("avenor control status: exit %d\n%s%s", code, out, errOut)
	}

	// Replay with after_seq: the hi chunk first, nothing older, no repeats.
	other, err := client.Dial(ctx, w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	replayed, err := other.Subscribe(ctx, client.SubscribeOptions{Replay: true, AfterSeq: hi.Seq - 1})
	if err != nil {
		t.Fatal(err)
	}
	if ev := until(t, replayed, "the first replayed event", func(client.Event, map[string]any) bool { return true }); ev.Seq != hi.Seq {
		t.Fatalf("replay after_seq %d started at seq %d", hi.Seq-1, ev.Seq)
	}
	h, err := other.History(ctx, client.HistoryOptions{AfterSeq: hi.Seq - 1})
	if err != nil || len(h.Events) == 0 || h.Events[0].Seq != hi.Seq {
		t.Fatalf("history after_seq: %+v, %v", h, err)
	}

	// tail through the binary, from now on.
	tail := exec.Command(filepath.Join(w.bin, "avenor"), "control", "--socket", w.sock, "tail")
	tail.Env = w.env
	tailOut, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	tailLines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(tailOut)
		for sc.Scan() {
			tailLines <- sc.Text()
		}
		close(tailLines)
	}()
	time.Sleep(200 * time.Millisecond) // let tail subscribe before turn 2

	// A queued prompt runs as turn 2 once turn 1 ends cleanly; the first
	// mutator owns the runtime.
	if err := owner.Prompt(ctx, "say two\nsleep 30s"); err != nil {
		t.Fatal(err)
	}
	var rpcErr *client.RPCError
	if err := other.Prompt(ctx, "say not mine"); !errors.As(err, &rpcErr) || rpcErr.Code != client.CodePermissionDenied {
		t.Fatalf("a second connection's prompt = %v", err)
	}
	if code, _, errOut := runBinary(w, "control", "--socket", w.sock, "cancel"); code != 1 || !strings.Contains(errOut, "avenor control: cancel: permission_denied (-32010)") {
		t.Fatalf("avenor control cancel from a non-owner: exit %d %s", code, errOut)
	}
	until(t, sub, "turn 2", func(ev client.Event, f map[string]any) bool {
		return ev.Name == "avenor.turn.start" && fmt.Sprint(f["turn"]) == "2"
	})
	until(t, sub, `the "two" chunk`, chunk("two"))

	// interrupt_and_prompt cancels turn 2 and continues the session.
	if err := owner.InterruptAndPrompt(ctx, "say three\nsleep 30s", false); err != nil {
		t.Fatal(err)
	}
	until(t, sub, "turn 3", func(ev client.Event, f map[string]any) bool {
		return ev.Name == "avenor.turn.start" && fmt.Sprint(f["turn"]) == "3"
	})
	until(t, sub, `the "three" chunk`, chunk("three"))

	// A second avenor on the same socket is refused.
	second := w.start(nil, nil, "run", "--backend", "scripted", "--prompt", "say x", "--control-socket", w.sock)
	if code := second.wait(t, 20*time.Second); code != 1 || !strings.Contains(second.stderr.String(), "avenor: control socket already in use: "+w.sock+"\n") {
		t.Fatalf("second avenor: exit %d, stderr %q", code, second.stderr.String())
	}

	// cancel: KILLED, 130.
	if err := owner.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	end := until(t, sub, "session.end", func(ev client.Event, _ map[string]any) bool { return ev.Name == "session.end" })
	if f, _ := end.Fields(); f["stop_reason"] != "cancelled" {
		t.Fatalf("session.end: %s", end.Raw)
	}
	if code := p.wait(t, 20*time.Second); code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, p.stderr.String())
	}
	sentinel, _ := os.ReadFile(filepath.Join(w.dir, "run.done"))
	if !strings.HasPrefix(string(sentinel), "KILLED\n") || !strings.Contains(string(sentinel), "STOP_REASON=cancelled\n") {
		t.Fatalf("sentinel:\n%s", sentinel)
	}
	if _, err := os.Lstat(w.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after the run: %v", err)
	}
	select {
	case <-owner.Done():
	case <-time.After(5 * time.Second):
		t.Error("the client's connection outlived the run")
	}

	// tail saw turn 2 and 3 as raw event lines, then ended with the server.
	if err := tail.Wait(); err != nil {
		t.Errorf("tail: %v", err)
	}
	var sawTwo, sawEnd bool
	for l := range tailLines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("tail line %q: %v", l, err)
		}
		sawTwo = sawTwo || strings.Contains(l, `"text":"two"`)
		sawEnd = sawEnd || ev["event"] == "session.end"
	}
	if !sawTwo || !sawEnd {
		t.Errorf("tail: two %v, session.end %v", sawTwo, sawEnd)
	}
	// The events file has the same seq order the subscribers saw.
	log, _ := os.ReadFile(filepath.Join(w.dir, "events.ndjson"))
	if !bytes.Contains(log, []byte(`"text":"three"`)) {
		t.Errorf("event log lacks turn 3")
	}
}

func TestControlSocketLeftByKilledAvenorIsReused(t *testing.T) {
	noLeaks(t)
	w := newE2EWorld(t)
	first := w.startRun("sleep 30s")
	_ = syscall.Kill(-first.cmd.Process.Pid, syscall.SIGKILL)
	first.wait(t, 10*time.Second)
	if _, err := os.Lstat(w.sock); err != nil {
		t.Fatalf("a killed avenor should leave its socket: %v", err)
	}
	second := w.startRun("say again")
	if code := second.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("avenor on a stale socket: exit %d\n%s", code, second.stderr.String())
	}
}

func runBinary(w *e2eWorld, args ...string) (int, string, string) {
	cmd := exec.Command(filepath.Join(w.bin, "avenor"), args...)
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		return -1, out.String(), err.Error()
	}
	return 0, out.String(), errb.String()
}

// A subscriber that never reads lags alone: the run streams on, the event
// log is complete, and the subscriber is told what it lost once it reads.
func TestControlSocketStuckSubscriberLags(t *testing.T) {
	noLeaks(t)
	w := newE2EWorld(t)
	ctx := context.Background()
	const flood = 20000
	p := w.startRun(fmt.Sprintf("flood %d\nsay flooded\nsleep 30s", flood))

	stuck, err := net.Dial("unix", w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscribe"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	owner, err := client.Dial(ctx, w.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	// The runtime is unaffected: the flood reaches the log while the stuck
	// subscriber reads nothing.
	deadline := time.Now().Add(30 * time.Second)
	for {
		log, _ := os.ReadFile(filepath.Join(w.dir, "events.ndjson"))
		if bytes.Contains(log, []byte(`"text":"flooded"`)) {
			if n := bytes.Count(log, []byte(`"text":"x"`)); n != flood {
				t.Fatalf("the log holds %d flood chunks, want %d", n, flood)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flood did not reach the log while a subscriber was stuck")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, err := owner.Status(ctx); err != nil || st.TurnState != "running" {
		t.Fatalf("status after the flood: %+v, %v", st, err)
	}
	// Now it reads: a lag notice with the count.
	_ = stuck.SetReadDeadline(time.Now().Add(20 * time.Second))
	sc := bufio.NewScanner(stuck)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var lag map[string]any
	for lag == nil && sc.Scan() {
		var note struct {
			Params map[string]any `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &note) == nil && note.Params["event"] == "subscriber.lagged" {
			lag = note.Params
		}
	}
	if lag == nil {
		t.Fatalf("no subscriber.lagged: %v", sc.Err())
	}
	if n, _ := lag["dropped_count"].(float64); n <= 0 {
		t.Fatalf("lag notice %v", lag)
	}
	if err := owner.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 20*time.Second); code != 130 {
		t.Fatalf("exit %d", code)
	}
}
