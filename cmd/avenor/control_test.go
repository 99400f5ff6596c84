package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// ctlRuntime is a runtime for the in-process `avenor control` tests.
type ctlRuntime struct {
	w  *event.Writer
	mu sync.Mutex
	// calls records what the control methods asked, in order.
	calls []string
	perm  *ctlAnswerer
}

// ctlRuntime is a control.Target: a run's runtime as the method table
// serves it; perm answers its permissions.
func (r *ctlRuntime) ID() string { return "" }
func (r *ctlRuntime) Status() any {
	return control.Status{RunID: "r1", Phase: "working", TurnState: control.TurnRunning, StartedAt: 1, UpdatedAt: 2, RetryAttempt: 1}
}
func (r *ctlRuntime) Prompt(_ context.Context, text string, interrupt, keep bool) error {
	if !interrupt {
		r.note("prompt " + text)
		return nil
	}
	if keep {
		text += " (keep)"
	}
	r.note("interrupt " + text)
	return nil
}
func (r *ctlRuntime) Result() any {
	h := r.w.History(0, 0)
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Type() == event.TypeSessionEnd {
			return map[string]any{"final_output": h[i]["final_output"]}
		}
	}
	return map[string]any{"final_output": ""}
}
func (r *ctlRuntime) AnswerPermission(req, opt, msg string) error {
	return r.perm.Answer(req, opt, msg)
}
func (r *ctlRuntime) Cancel()               { r.note("cancel") }
func (r *ctlRuntime) Events() *event.Writer { return r.w }
func (r *ctlRuntime) note(s string) {
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.mu.Unlock()
}

type ctlAnswerer struct{ got string }

func (a *ctlAnswerer) Pending() bool { return true }
func (a *ctlAnswerer) Answer(req, opt, msg string) error {
	a.got = req + " " + opt
	return nil
}

func startCtlServer(t *testing.T) (*ctlRuntime, *control.Server) {
	t.Helper()
	rt := &ctlRuntime{w: event.NewWriter(nil, event.Stamp{RunID: "r1"}, event.Options{}), perm: &ctlAnswerer{}}
	s := control.NewServer(control.Config{Path: filepath.Join(t.TempDir(), "s")})
	control.RegisterOne(s, rt, "")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return rt, s
}

func runCtl(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func TestControlCommandsOutputs(t *testing.T) {
	noLeaks(t)
	rt, s := startCtlServer(t)
	sock := s.Path()
	wantStatus, _ := json.MarshalIndent(rt.Status(), "", "  ")
	cases := []struct {
		name        string
		args        []string
		code        int
		out, errOut string
	}{
		{"status", []string{"control", "--socket", sock, "status"}, 0, string(wantStatus) + "\n", ""},
		{"socket after the command", []string{"control", "status", "--socket", sock}, 0, string(wantStatus) + "\n", ""},
		{"single-dash socket", []string{"control", "-socket", sock, "status"}, 0, string(wantStatus) + "\n", ""},
		{"prompt", []string{"control", "--socket", sock, "prompt", "go on"}, 0, "prompt queued\n", ""},
		{"interrupt", []string{"control", "--socket", sock, "interrupt-and-prompt", "stop"}, 0, "interrupt queued\n", ""},
		{"answer", []string{"control", "--socket", sock, "answer-permission", "p1", "allow"}, 0, "permission answered\n", ""},
		{"cancel", []string{"control", "--socket", sock, "cancel"}, 0, "cancelled\n", ""},
		{"unknown runtime", []string{"control", "--socket", sock, "status", "rt_4"}, 1, "",
			"avenor control: status: method not found (-32601): status with runtime_id \"rt_4\" is a stable form: this one-shot avenor run controls one runtime; omit runtime_id\n"},
		{"list is stable-only", []string{"control", "--socket", sock, "list"}, 1, "", "avenor control: list: method not found (-32601)\n"},
		{"shutdown is stable-only", []string{"control", "--socket", sock, "shutdown"}, 1, "", "avenor control: shutdown: method not found (-32601)\n"},
		{"tree_budget is stable-only", []string{"control", "--socket", sock, "tree_budget"}, 1, "", "avenor control: tree_budget: method not found (-32601)\n"},
		{"spawn is stable-only", []string{"control", "--socket", sock, "spawn", "--prompt", "x", "--timeout", "90"}, 1, "", "avenor control: spawn: method not found (-32601)\n"},
		{"empty socket", []string{"control", "--socket", "", "status"}, 2, "", "avenor control: --socket is required\n"},
		{"no socket, no AVENOR_SOCKET, no HOME", []string{"control", "status"}, 2, "", "avenor control: " + client.ErrNoDefaultSocket.Error() + "\n"},
		{"no command", []string{"control", "--socket", sock}, 2, "", "avenor control: a command is required (status, list, tail, spawn, cancel, prompt, interrupt-and-prompt, answer-permission, shutdown, tree_budget, wait-for-capacity)\n"},
		{"unknown command", []string{"control", "--socket", sock, "frobnicate"}, 2, "", "avenor control: unknown command \"frobnicate\"\n"},
		{"prompt without text", []string{"control", "--socket", sock, "prompt"}, 2, "", "avenor control: prompt: usage: avenor control --socket <path> prompt <text> [runtime-id]\n"},
		{"bad shutdown mode", []string{"control", "--socket", sock, "shutdown", "now"}, 2, "", "avenor control: shutdown: unknown mode \"now\" (graceful, kill or immediate)\n"},
		{"spawn without prompt", []string{"control", "--socket", sock, "spawn", "--dir", "."}, 2, "", "avenor control: spawn: --prompt, --prompt-file, --loop-file, or --team-file is required\n"},
		{"spawn bad timeout", []string{"control", "--socket", sock, "spawn", "--prompt", "x", "--timeout", "soon"}, 2, "", "avenor control: spawn: --timeout \"soon\": want seconds (600) or a Go duration (10m)\n"},
		{"unknown flag", []string{"control", "--socket", sock, "status", "--bogus"}, 2, "", "avenor control: unknown flag: --bogus\n"},
		{"no server", []string{"control", "--socket", filepath.Join(t.TempDir(), "none"), "cancel"}, 1, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCtl(c.args...)
			if code != c.code || out != c.out || (c.errOut != "" && errOut != c.errOut) {
				t.Errorf("exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", code, out, errOut, c.code, c.out, c.errOut)
			}
			if c.name == "no server" && !strings.HasPrefix(errOut, "avenor control: cancel: ") {
				t.Errorf("stderr %q", errOut)
			}
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if got := strings.Join(rt.calls, "|"); got != "prompt go on|interrupt stop|cancel" {
		t.Errorf("runtime saw %q", got)
	}
	if code, out, _ := runCtl("control", "--help"); code != 0 || !strings.Contains(out, "interrupt-and-prompt <text> [runtime-id]") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}

func TestControlTailPrintsRawEventsUntilServerGoes(t *testing.T) {
	noLeaks(t)
	rt, s := startCtlServer(t)
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"control", "--socket", s.Path(), "tail"}, Env{Stdout: pw, Stderr: &errb, Getenv: func(string) string { return "" }})
		pw.Close()
	}()
	// tail subscribes with no params: live events from the next one on, so
	// write until the first one shows up.
	lines := bufio.NewReader(pr)
	got := make(chan string, 16)
	go func() {
		for {
			l, err := lines.ReadString('\n')
			if err != nil {
				close(got)
				return
			}
			got <- l
		}
	}()
	var first string
	for first == "" {
		stamped, err := rt.w.Write(event.Event{"event": "agent.message_chunk", "content": map[string]any{"text": "<hi>"}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case first = <-got:
			want, _ := json.Marshal(stamped)
			if first != string(want)+"\n" && !strings.Contains(first, `"event":"agent.message_chunk"`) {
				t.Fatalf("tail printed %q", first)
			}
		case <-time.After(100 * time.Millisecond):
		}
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(first), &ev); err != nil || !strings.Contains(first, `\u003chi\u003e`) {
		t.Fatalf("tail line %q is not the raw event JSON: %v", first, err)
	}
	s.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("tail exit %d: %s", code, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("tail did not end with the server")
	}
	for range got {
	}
}

// noLeaks checks, after the test's cleanups, that it left no goroutine.
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
