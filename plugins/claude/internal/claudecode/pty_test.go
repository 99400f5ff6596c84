package claudecode

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestReadScreen reads screens of Claude Code 2.1.332 recorded through the
// terminal emulator.
func TestReadScreen(t *testing.T) {
	for _, tc := range []struct {
		file                   string
		ready, busy, perm, idl bool
		input                  string
	}{
		{file: "idle_start.txt", ready: true, idl: true},
		{file: "typed.txt", ready: true, idl: true, input: "Create out.txt containing hello using the shell."},
		{file: "busy.txt", ready: true, busy: true},
		{file: "permission.txt", perm: true},
		{file: "done.txt", ready: true, idl: true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "screens", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, screen, _ := strings.Cut(string(b), "\n") // the header line
			st := readScreen(screen)
			if st.ready != tc.ready || st.busy != tc.busy || st.permission != tc.perm || st.idle() != tc.idl || st.inputLine != tc.input {
				t.Errorf("readScreen = %+v (idle %v), want ready %v busy %v permission %v idle %v input %q",
					st, st.idle(), tc.ready, tc.busy, tc.perm, tc.idl, tc.input)
			}
		})
	}
}

// TestTranscriptTail replays a recorded 2.1.332 transcript (one turn: a
// Bash call allowed in the TUI, then DONE) through the tailer, written in
// two pieces with the cut inside a line.
func TestTranscriptTail(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "transcript_2.1.332.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "22222222-2222-3333-4444-555555555555"
	config := t.TempDir()
	dir := filepath.Join(config, "projects", "-tmp-ws")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".jsonl")
	tail := &transcriptTail{configDir: config, sessionID: id}
	if lines := tail.next(); lines != nil {
		t.Fatalf("lines before the transcript exists: %q", lines)
	}
	cut := bytes.Index(data, []byte(`"type":"assistant"`)) + 5
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	lines := tail.next()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data[cut:]); err != nil {
		t.Fatal(err)
	}
	f.Close()
	lines = append(lines, tail.next()...)
	if want := bytes.Count(data, []byte("\n")); len(lines) != want {
		t.Fatalf("%d lines, want %d", len(lines), want)
	}

	kinds := map[string]string{}
	var types []runtime.EventType
	var final string
	ended := false
	for _, l := range lines {
		evs, end, text := transcriptEvents(id, l, kinds)
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		if text != "" {
			final = text
		}
		ended = ended || end
	}
	want := []runtime.EventType{runtime.EventToolCall, runtime.EventToolCallUpdate, runtime.EventMessageChunk}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events %v, want %v (the many other record types skipped)", types, want)
	}
	if final != "DONE" || !ended {
		t.Errorf("final text %q, ended %v; want DONE and the turn_duration record to end the turn", final, ended)
	}

	// A new turn starts at the end: history is not replayed.
	tail.skipToEnd()
	if lines := tail.next(); len(lines) != 0 {
		t.Errorf("%d lines after skipToEnd", len(lines))
	}
}

func TestClaudeConfigDir(t *testing.T) {
	if got := claudeConfigDir([]string{"HOME=/h"}); got != "/h/.claude" {
		t.Errorf("HOME only: %q", got)
	}
	if got := claudeConfigDir([]string{"HOME=/h", "CLAUDE_CONFIG_DIR=/c"}); got != "/c" {
		t.Errorf("CLAUDE_CONFIG_DIR: %q", got)
	}
}

// TestPTYDescribe: the interactive backend is honest about what it is.
// Open with a resume id (a fresh plugin asked for a session another held)
// is tested in TestPTYResumeRefused.
func TestPTYDescribe(t *testing.T) {
	info := NewPTYBackend().Info()
	if info.Capability(runtime.CapResume) != runtime.Supported || info.ResumeScope != runtime.ResumeInProcess {
		t.Errorf("claude advertises resume %q (%q); want supported in_process: sessions live only with their terminal", info.Capability(runtime.CapResume), info.ResumeScope)
	}
	if info.Capability(runtime.CapPermissionRelay) != runtime.Experimental {
		t.Errorf("claude permission relay %q, want experimental (read from the screen)", info.Capability(runtime.CapPermissionRelay))
	}
}

// TestPTYResumeRefused: a resume by id names a session this process does
// not hold; it is the user's "not found", saying why and what to use.
func TestPTYResumeRefused(t *testing.T) {
	_, err := NewPTYBackend().Open(context.Background(), runtime.OpenRequest{Dir: t.TempDir(),
		ResumeSessionID: "22222222-2222-3333-4444-555555555555"}, nil)
	if err == nil || !strings.Contains(err.Error(), runtime.ErrSessionNotFound.Error()) || runtime.FaultOf(err) != runtime.FaultUser ||
		!strings.Contains(err.Error(), "in_process") || !strings.Contains(err.Error(), "claude-stream") {
		t.Errorf("Open with a resume id: %v (fault %s); want a user-fault session-not-found naming in_process and claude-stream", err, runtime.FaultOf(err))
	}
}

// TestPTYCheckTmux: with AVENOR_CLAUDE_TERMINAL=tmux the backend is ready
// only where tmux is installed, and a bad launcher name is not ready.
func TestPTYCheckTmux(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '2.1.332 (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"binary": fake}
	check := func(env map[string]string) runtime.Readiness {
		return NewPTYBackend().Check(context.Background(), runtime.CheckRequest{Options: opts, Env: env})
	}
	if r := check(nil); !r.Ready {
		t.Fatalf("pty: not ready: %s", r.Message)
	}
	if r := check(map[string]string{TerminalEnv: "screen"}); r.Ready || !strings.Contains(r.Message, "not a terminal launcher") {
		t.Errorf("launcher screen: ready %v, %q", r.Ready, r.Message)
	}
	// The CLI check is claude-stream's, but it speaks in this backend's name.
	noCLI := NewPTYBackend().Check(context.Background(), runtime.CheckRequest{Options: map[string]any{"binary": filepath.Join(t.TempDir(), "nope")}})
	if noCLI.Ready || !strings.HasPrefix(noCLI.Message, PTYName+": ") {
		t.Errorf("no claude CLI: ready %v, %q, want a message naming %s", noCLI.Ready, noCLI.Message, PTYName)
	}
	t.Setenv("PATH", t.TempDir()) // no tmux
	if r := check(map[string]string{TerminalEnv: "tmux"}); r.Ready || !strings.Contains(r.Message, "tmux is not installed") || !strings.Contains(r.Message, "unset "+TerminalEnv) {
		t.Errorf("tmux missing: ready %v, %q", r.Ready, r.Message)
	}
}

// TestTerminalOpenRefusals: both terminal backends refuse, before anything
// starts, a server URL (the user's fault, naming ANTHROPIC_BASE_URL) and a
// terminal launcher they do not know, in the backend's own name, and a CLI
// that is not Claude Code (in claude-stream's: the check is its).
func TestTerminalOpenRefusals(t *testing.T) {
	notClaude := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notClaude, []byte("#!/bin/sh\necho 'claude 1.0 (not Anthropic)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name string
		new  func() runtime.Backend
	}{{PTYName, NewPTYBackend}, {ChannelName, NewChannelBackend}} {
		for _, tc := range []struct {
			name  string
			req   runtime.OpenRequest
			fault runtime.Fault
			want  string
		}{
			{"server URL", runtime.OpenRequest{ServerURL: "http://127.0.0.1:1"}, runtime.FaultUser,
				b.name + " does not use a server URL (--server-url); set ANTHROPIC_BASE_URL in [backends." + b.name + "].env"},
			{"unknown launcher", runtime.OpenRequest{Env: map[string]string{TerminalEnv: "screen"}}, runtime.FaultUser,
				b.name + ": " + TerminalEnv + `="screen" is not a terminal launcher`},
			{"not Claude Code", runtime.OpenRequest{Options: map[string]any{"binary": notClaude}}, runtime.FaultRuntime,
				StreamName + ": " + notClaude + " is not Claude Code"},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				tc.req.Dir = t.TempDir()
				s, err := b.new().Open(context.Background(), tc.req, nil)
				if err == nil {
					_ = s.Close(context.Background())
					t.Fatal("Open succeeded")
				}
				if runtime.FaultOf(err) != tc.fault || !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("Open = %v (fault %s); want a %s fault starting %q", err, runtime.FaultOf(err), tc.fault, tc.want)
				}
			})
		}
	}
}
