package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// channelBins: avenor, the claude plugin and the fake channel Claude,
// built once ($AVENOR_TEST_BIN supplies the first two when set).
var channelBins struct {
	once sync.Once
	dir  string // avenor + avenor-plugin-claude
	fake string // fakechannelclaude, installed as "claude" in its own dir
	err  error
}

func channelBinaries(t *testing.T) (binDir, fakeDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the avenor binary")
	}
	channelBins.once.Do(func() {
		// One fixed directory, rebuilt each run (as control_e2e_test.go's):
		// no test owns a cleanup for a build all of them share.
		tmp := filepath.Join(os.TempDir(), fmt.Sprintf("avenor-channel-test-%d", os.Getuid()))
		if err := os.MkdirAll(tmp, 0o700); err != nil {
			channelBins.err = err
			return
		}
		channelBins.dir = tmp
		builds := []struct{ wd, out, pkg string }{
			{"../../plugins/claude", filepath.Join(tmp, "fake", "claude"), "./internal/fakechannelclaude"},
		}
		if d := os.Getenv("AVENOR_TEST_BIN"); d != "" {
			channelBins.dir, _ = filepath.Abs(d)
		} else {
			builds = append(builds,
				struct{ wd, out, pkg string }{".", filepath.Join(tmp, "avenor"), "."},
				struct{ wd, out, pkg string }{"../../plugins/claude", filepath.Join(tmp, "avenor-plugin-claude"), "."})
		}
		channelBins.fake = filepath.Join(tmp, "fake")
		for _, b := range builds {
			cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
			cmd.Dir = b.wd
			if out, err := cmd.CombinedOutput(); err != nil {
				channelBins.err = fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
				return
			}
		}
	})
	if channelBins.err != nil {
		t.Fatal(channelBins.err)
	}
	return channelBins.dir, channelBins.fake
}

// avenorCmd is the built avenor in an isolated HOME, finding plugins only
// in binDir.
func avenorCmd(t *testing.T, binDir, dir string, args ...string) *exec.Cmd {
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(binDir, "avenor"), args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "AVENOR_PLUGIN_PATH=" + binDir,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".data"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
	return cmd
}

func TestClaudeChannelCleanupCommand(t *testing.T) {
	binDir, _ := channelBinaries(t)
	tests := []struct {
		name    string
		initial string // "" = no file
		out     string // with <path> for the file
		code    int
		after   string // "" = no file
	}{
		{"no file", "", "removed 0 avenor-channel entries from <path>\n", 0, ""},
		{"nothing to remove", `{"mcpServers":{"mine":{"command":"x"}}}`, "removed 0 avenor-channel entries from <path>\n", 0, `{"mcpServers":{"mine":{"command":"x"}}}`},
		{"some removed", `{"k":1,"mcpServers":{"avenor-channel-1":{},"avenor-channel-2":{},"mine":{"command":"x"}}}`,
			"removed 2 avenor-channel entries from <path>\n", 0, "{\n  \"k\": 1,\n  \"mcpServers\": {\n    \"mine\": {\n      \"command\": \"x\"\n    }\n  }\n}\n"},
		{"all removed deletes the file", `{"mcpServers":{"avenor-channel-1":{}}}`, "removed 1 avenor-channel entries from <path>\n", 0, ""},
		{"malformed is left alone", `{"mcpServers":`, "", 1, `{"mcpServers":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ".mcp.json")
			if tc.initial != "" {
				if err := os.WriteFile(path, []byte(tc.initial), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := avenorCmd(t, binDir, t.TempDir(), "claude-channel-cleanup", "--dir", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit %d (stderr %s), want %d", code, stderr.String(), tc.code)
			}
			if want := strings.ReplaceAll(tc.out, "<path>", path); stdout.String() != want {
				t.Errorf("stdout %q, want %q", stdout.String(), want)
			}
			if tc.code != 0 && !strings.Contains(stderr.String(), "fix or remove the file") {
				t.Errorf("stderr %q does not say how to fix it", stderr.String())
			}
			got, err := os.ReadFile(path)
			if tc.after == "" && !os.IsNotExist(err) || tc.after != "" && string(got) != tc.after {
				t.Errorf("file afterwards %q (%v), want %q", got, err, tc.after)
			}
		})
	}
}

func TestClaudeChannelCommand(t *testing.T) {
	binDir, _ := channelBinaries(t)
	for _, args := range [][]string{{}, {"--run-id", "r"}, {"--run-id", "r", "--token", "t"}, {"--token", "t", "--broker-url", "u"}} {
		cmd := avenorCmd(t, binDir, t.TempDir(), append([]string{"claude-channel"}, args...)...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "--run-id, --token, and --broker-url are required") {
			t.Errorf("%v: exit %d, %s", args, cmd.ProcessState.ExitCode(), out)
		}
	}
	// With the flags, avenor becomes the plugin's sidecar: stdio passes
	// straight through (the broker is not needed to answer initialize).
	cmd := avenorCmd(t, binDir, t.TempDir(), "claude-channel", "--run-id", "r", "--token", "t", "--broker-url", "http://127.0.0.1:9")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	var resp struct {
		Result struct {
			ProtocolVersion string                `json:"protocolVersion"`
			ServerInfo      struct{ Name string } `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil || resp.Result.ProtocolVersion != "2024-11-05" || resp.Result.ServerInfo.Name != "avenor" {
		t.Fatalf("stdout %q (%v)", stdout.String(), err)
	}
}

// avenor run --backend claude-channel end to end against the fake Claude:
// the sidecar in .mcp.json is this avenor (AVENOR_EXECUTABLE), which execs
// the plugin; the token shows up nowhere.
func TestRunClaudeChannel(t *testing.T) {
	binDir, fakeDir := channelBinaries(t)
	dir := t.TempDir()
	events := filepath.Join(t.TempDir(), "events.ndjson")
	fakeLog := filepath.Join(t.TempDir(), "fake.log")
	cmd := avenorCmd(t, binDir, dir, "run", "--backend", "claude-channel", "--prompt", "say hi", "--on-event", events, "--timeout", "60s")
	for i, e := range cmd.Env {
		if strings.HasPrefix(e, "PATH=") {
			cmd.Env[i] = "PATH=" + fakeDir + ":" + os.Getenv("PATH")
		}
	}
	cmd.Env = append(cmd.Env, "AVENOR_CLAUDE_TERMINAL=pty", "FAKECHANNEL_LOG="+fakeLog)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	logs, _ := os.ReadFile(fakeLog)
	if err != nil {
		t.Fatalf("avenor run: %v\nstderr:\n%s\nfake log:\n%s", err, stderr.String(), logs)
	}
	t.Logf("run took %v", time.Since(start))
	f, _ := os.Open(events)
	defer f.Close()
	byType := map[string][]map[string]any{}
	var raw bytes.Buffer
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			typ, _ := ev["event"].(string)
			byType[typ] = append(byType[typ], ev)
		}
	}
	// The prompt goes both ways: typed into the terminal, then queued on the
	// channel. The agent may answer the typed prompt before the channel's
	// queue is logged, so its report follows the first delivery, not both.
	for _, order := range [][]string{
		{"session.start", "agent.channel_ready", "agent.prompt_submitted", "agent.prompt_queued"},
		{"agent.prompt_submitted", "agent.report", "agent.finish", "session.end"},
	} {
		var seen []string
		for _, typ := range order {
			if len(byType[typ]) == 0 {
				t.Errorf("no %s event", typ)
				continue
			}
			seen = append(seen, typ)
			if seq := byType[typ][0]["seq"].(float64); len(seen) > 1 && seq < byType[seen[len(seen)-2]][0]["seq"].(float64) {
				t.Errorf("%s comes before %s", typ, seen[len(seen)-2])
			}
		}
	}
	if t.Failed() {
		t.Logf("events:\n%s", raw.String())
	}
	if st := byType["session.start"]; len(st) > 0 && (st[0]["dangerously_load"] != true || !strings.HasPrefix(fmt.Sprint(st[0]["broker_url"]), "http://127.0.0.1:")) {
		t.Errorf("session.start %v", st[0])
	}
	if end := byType["session.end"]; len(end) > 0 && (end[0]["stop_reason"] != "end_turn" || end[0]["status"] != "done" || end[0]["summary"] != "echo: say hi") {
		t.Errorf("session.end %v", end[0])
	}
	if !strings.Contains(string(logs), "server command "+filepath.Join(binDir, "avenor")+"\n") {
		t.Errorf("the sidecar command is not this avenor (%s):\n%s", filepath.Join(binDir, "avenor"), logs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf(".mcp.json left behind: %v", err)
	}
	// Tokens are 32 hex digits; no id avenor uses has that shape (UUIDs
	// have dashes, run ids 16 digits), so any such word is a leak.
	tokenRE := regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	if m := tokenRE.FindString(raw.String() + stderr.String()); m != "" {
		t.Errorf("a 32-hex token %s appears in the events or stderr", m)
	}
}
