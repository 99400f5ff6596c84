package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/sdk/mcpconfig"
	"github.com/avenor-go/avenor/sdk/runtime"
)

var (
	fakeChannelOnce sync.Once
	fakeChannelBin  string
	fakeChannelErr  error
)

// fakeChannelClaude builds internal/fakechannelclaude once.
func fakeChannelClaude(t *testing.T) string {
	t.Helper()
	fakeChannelOnce.Do(func() {
		fakeChannelBin = filepath.Join(filepath.Dir(pluginBin), "fakechannelclaude")
		out, err := exec.Command("go", "build", "-o", fakeChannelBin, "../fakechannelclaude").CombinedOutput()
		if err != nil {
			fakeChannelErr = errors.New(string(out))
		}
	})
	if fakeChannelErr != nil {
		t.Fatalf("building fakechannelclaude: %v", fakeChannelErr)
	}
	return fakeChannelBin
}

type channelFixture struct {
	dir, home, log string
	sess           *channelSession
	host           *testHost
}

// openChannel opens a session on the fake; leaks are checked after its
// Close (cleanups run last-in first-out).
func openChannel(t *testing.T, terminal string, host *testHost, options ...string) *channelFixture {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	if terminal == "tmux" {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Skip("tmux not installed")
		}
	}
	f := &channelFixture{dir: t.TempDir(), home: t.TempDir(), host: host}
	f.log = filepath.Join(f.home, "fake.log")
	t.Cleanup(func() {
		if t.Failed() {
			data, _ := os.ReadFile(f.log)
			t.Logf("fake log:\n%s", data)
		}
	})
	// Another server the session must leave alone.
	if err := os.WriteFile(mcpconfig.Path(f.dir), []byte(`{"mcpServers":{"mine":{"command":"mine"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := map[string]any{"binary": fakeChannelClaude(t)}
	for i := 0; i+1 < len(options); i += 2 {
		opts[options[i]] = options[i+1]
	}
	b := &channelBackend{getenv: func(k string) string {
		if k == ExecutableEnv {
			return pluginBin
		}
		return ""
	}}
	s, err := b.Open(context.Background(), runtime.OpenRequest{Backend: ChannelName, Dir: f.dir,
		Env:     map[string]string{"HOME": f.home, TerminalEnv: terminal, "FAKECHANNEL_LOG": f.log},
		Options: opts}, host)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	f.sess = s.(*channelSession)
	t.Cleanup(func() { _ = f.sess.Close(context.Background()) })
	waitUntil(t, "the sidecar to register", f.sess.ready.Load)
	return f
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChannelSession(t *testing.T) {
	for _, terminal := range []string{"pty", "tmux"} {
		t.Run(terminal, func(t *testing.T) {
			host := &testHost{}
			f := openChannel(t, terminal, host)
			s := f.sess

			servers, err := mcpconfig.Servers(mcpconfig.Path(f.dir))
			if err != nil {
				t.Fatal(err)
			}
			entry, ok := servers[s.serverName]
			if !ok || servers["mine"].Command != "mine" || !strings.HasPrefix(s.serverName, "avenor-channel-") || len(s.serverName) != len("avenor-channel-")+8 {
				t.Fatalf(".mcp.json servers %+v (ours %q)", servers, s.serverName)
			}
			if entry.Command != pluginBin || len(entry.Args) != 7 || entry.Args[0] != "claude-channel" || entry.Args[2] != s.runID || entry.Args[6] != s.brokerURL {
				t.Fatalf("our entry %+v", entry)
			}
			token := entry.Args[4]
			if len(token) != 32 {
				t.Fatalf("token %q is not 16 bytes of hex", token)
			}
			if _, err := os.Stat(filepath.Join(s.cleanup.tmpDir, "mcp.json")); err != nil || !strings.HasPrefix(filepath.Base(s.cleanup.tmpDir), "avenor-claude-channel-") {
				t.Fatalf("temp mcp.json: %v (%s)", err, s.cleanup.tmpDir)
			}
			if len(host.of(EventChannelReady)) != 0 {
				t.Fatal("agent.channel_ready before the first prompt (it would precede session.start)")
			}
			res, err := s.Prompt(context.Background(), runtime.Turn{Text: "hello there"})
			if err != nil {
				t.Fatal(err)
			}
			ready := host.of(EventChannelReady)
			if len(ready) != 1 || ready[0].Fields["run_id"] != s.runID || ready[0].Fields["server_name"] != s.serverName || ready[0].Fields["source"] != "channel" {
				t.Fatalf("channel_ready %v", ready)
			}
			if res.StopReason != runtime.StopEndTurn || res.Extra["status"] != "done" || res.Extra["summary"] != "echo: hello there" ||
				strings.Join(res.Extra["files_changed"].([]string), ",") != "out.txt" || res.FinalOutput != "echo: hello there" {
				t.Fatalf("turn result %+v", res)
			}
			sub := host.of(EventPromptSubmitted)[0].Fields
			if sub["delivery"] != terminal || sub["prompt_length"] != 11 {
				t.Errorf("prompt_submitted %v", sub)
			}
			q := host.of(EventPromptQueued)
			if len(q) != 1 || q[0].Fields["message_type"] != "continue" || q[0].Fields["delivery"] != "channel" || q[0].Fields["control_id"] == "" || q[0].Fields["prompt_length"] != 11 {
				t.Errorf("prompt_queued %v", q)
			}
			if r := host.of(EventReport); len(r) == 0 || r[0].Fields["state"] != "working" || r[0].Fields["source"] != "channel" {
				t.Errorf("agent.report %v", r)
			}
			if st := host.of(EventStatus); len(st) == 0 || st[0].Fields["phase"] != "working" {
				t.Errorf("agent.status %v", st)
			}
			if fin := host.of(EventFinish); len(fin) == 0 || fin[0].Fields["status"] != "done" || fin[0].Fields["summary"] != "echo: hello there" {
				t.Errorf("agent.finish %v", fin)
			}
			if len(host.of(runtime.EventMessageChunk)) == 0 {
				t.Error("no transcript message chunk")
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			host.mu.Lock()
			all, _ := json.Marshal(host.events)
			host.mu.Unlock()
			if strings.Contains(string(all), token) {
				t.Error("the broker token appears in an event")
			}
			if servers, _ := mcpconfig.Servers(mcpconfig.Path(f.dir)); len(servers) != 1 || servers["mine"].Command != "mine" {
				t.Errorf(".mcp.json after Close: %+v", servers)
			}
			if _, err := os.Stat(s.cleanup.tmpDir); !os.IsNotExist(err) {
				t.Errorf("temp dir left: %v", err)
			}
		})
	}
}

func TestChannelTurns(t *testing.T) {
	allow := choose(runtime.KindAllowOnce)
	deny := choose(runtime.KindReject)
	tests := []struct {
		name     string
		prompt   string
		decide   func(runtime.PermissionRequest) runtime.PermissionDecision
		stop     runtime.StopReason
		status   string
		summary  string
		askedVia string
	}{
		{"failed maps to error", "please fail", nil, runtime.StopError, "failed", "echo: please fail", ""},
		{"blocked maps to blocked", "you are blocked", nil, "blocked", "blocked", "echo: you are blocked", ""},
		{"permission allowed over the channel", "needs permission", allow, runtime.StopEndTurn, "done", "allowed: hi", "channel"},
		{"permission denied over the channel", "needs permission", deny, "blocked", "blocked", "permission denied", "channel"},
		{"permission without a channel relay is answered from the screen", "permission norelay", allow, runtime.StopEndTurn, "done", "allowed: hi", "pty"},
		{"no avenor_finish", "nofinish", nil, runtime.StopEndTurn, "done", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := &testHost{decide: tc.decide}
			f := openChannel(t, "pty", host, DeliveryOption, deliverChannel)
			res, err := f.sess.Prompt(context.Background(), runtime.Turn{Text: tc.prompt})
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != tc.stop || res.Extra["status"] != tc.status {
				t.Fatalf("result %+v, want stop %s status %s", res, tc.stop, tc.status)
			}
			if tc.summary != "" && res.Extra["summary"] != tc.summary {
				t.Errorf("summary %v, want %s", res.Extra["summary"], tc.summary)
			}
			host.mu.Lock()
			perms := host.perms
			host.mu.Unlock()
			if tc.askedVia != "" {
				if len(perms) != 1 || perms[0].Fields["source"] != tc.askedVia || perms[0].Tool != "Bash" || tc.askedVia == "channel" && perms[0].Fields["request_id"] != "abcde" {
					t.Fatalf("permission requests %+v", perms)
				}
			} else if len(perms) != 0 {
				t.Fatalf("unexpected permission requests %+v", perms)
			}
			_ = f.sess.Close(context.Background())
		})
	}
}

func TestChannelCancel(t *testing.T) {
	host := &testHost{}
	f := openChannel(t, "pty", host, DeliveryOption, deliverChannel)
	go func() {
		time.Sleep(700 * time.Millisecond)
		_ = f.sess.Cancel(context.Background())
	}()
	start := time.Now()
	res, err := f.sess.Prompt(context.Background(), runtime.Turn{Text: "go slow"})
	if err != nil || res.StopReason != runtime.StopCancelled {
		t.Fatalf("result %+v, %v; want cancelled", res, err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancel took %v", el)
	}
	_ = f.sess.Close(context.Background())
}

// The .mcp.json entry goes as soon as Claude dies, not only at Close.
func TestChannelTerminalDeath(t *testing.T) {
	f := openChannel(t, "pty", &testHost{})
	_ = syscall.Kill(-f.sess.term.pid(), syscall.SIGKILL)
	waitUntil(t, "the entry to be removed", func() bool {
		servers, _ := mcpconfig.Servers(mcpconfig.Path(f.dir))
		_, ours := servers[f.sess.serverName]
		return !ours && servers["mine"].Command == "mine"
	})
	_ = f.sess.Close(context.Background())
}

// A malformed .mcp.json fails Open, is left as it was, and nothing of
// the session remains.
func TestChannelOpenFailureCleansUp(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	bad := `{"mcpServers": [`
	if err := os.WriteFile(mcpconfig.Path(dir), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "avenor-claude-channel-*"))
	_, err := NewChannelBackend().Open(context.Background(), runtime.OpenRequest{Backend: ChannelName, Dir: dir,
		Env: map[string]string{"HOME": t.TempDir(), TerminalEnv: "pty"}, Options: map[string]any{"binary": fakeChannelClaude(t)}}, &testHost{})
	var re *runtime.Error
	if !errors.As(err, &re) || re.Fault != runtime.FaultUser || !strings.Contains(err.Error(), "fix or remove the file") {
		t.Fatalf("Open error %v", err)
	}
	if got, _ := os.ReadFile(mcpconfig.Path(dir)); string(got) != bad {
		t.Errorf(".mcp.json changed to %q", got)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "avenor-claude-channel-*"))
	if len(after) > len(before) {
		t.Errorf("temp dirs left: %v", after)
	}
}

func TestChannelLauncherChoice(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want launcher
		err  bool
	}{{"", launcherTmux, false}, {"tmux", launcherTmux, false}, {"pty", launcherPTY, false}, {"screen", "", true}} {
		got, err := terminalLauncher([]string{TerminalEnv + "=" + tc.v}, ChannelName, launcherTmux)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%q: %q, %v", tc.v, got, err)
		}
	}
}

func TestFinishStop(t *testing.T) {
	for status, want := range map[string]runtime.StopReason{"done": "end_turn", "failed": "error", "blocked": "blocked", "": "end_turn"} {
		if got := finishStop(status); got != want {
			t.Errorf("finishStop(%q) = %q, want %q", status, got, want)
		}
	}
}

func TestChannelCheck(t *testing.T) {
	fake := fakeChannelClaude(t)
	for _, tc := range []struct {
		name, terminal, path string
		ready                bool
		msg                  string
	}{
		{"pty needs no tmux", "pty", "/nonexistent", true, "found"},
		{"tmux missing", "", "/nonexistent", false, "tmux is not installed"},
		{"bad launcher", "screen", "/nonexistent", false, "is not a terminal launcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.path)
			r := NewChannelBackend().Check(context.Background(), runtime.CheckRequest{Backend: ChannelName,
				Env: map[string]string{TerminalEnv: tc.terminal, "PATH": tc.path}, Options: map[string]any{"binary": fake}})
			if r.Ready != tc.ready || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("Check = %+v", r)
			}
		})
	}
}
