package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// `avenor probe` (docs/cli.md#avenor-probe) through the built avenor, this plugin and
// the fake ACP agent installed as "opencode" on PATH: the host's real path.

var bins struct{ avenor, pluginDir, agentDir string }

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "avenor-opencode-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	root, _ := filepath.Abs("../..")
	bins.avenor = filepath.Join(tmp, "avenor-alone", "avenor")
	bins.pluginDir = filepath.Join(tmp, "plugins")
	bins.agentDir = filepath.Join(tmp, "agent-bin")
	steps := [][]string{
		{".", "build", "-o", filepath.Join(bins.pluginDir, "avenor-plugin-opencode"), "."},
		{filepath.Join(root, "sdk"), "build", "-o", filepath.Join(bins.agentDir, "opencode"), "./acp/internal/fakeagent"},
		{root, "build", "-o", bins.avenor, "./cmd/avenor"},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", s[1:]...)
			cmd.Dir = s[0]
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s: %v\n%s", strings.Join(s[1:], " "), err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func probe(t *testing.T, args ...string) (exit int, stderr string, events []map[string]any, ws string) {
	t.Helper()
	tmp := t.TempDir()
	ws = filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "probe.ndjson")
	cmd := exec.Command(bins.avenor, append([]string{"probe", "--out", out, "--dir", ws, "--timeout", "60s"}, args...)...)
	cmd.Env = []string{
		"HOME=" + tmp, "XDG_CONFIG_HOME=" + tmp + "/config", "XDG_DATA_HOME=" + tmp + "/data", "XDG_STATE_HOME=" + tmp + "/state",
		"PATH=" + bins.agentDir + ":/usr/bin:/bin", "AVENOR_PLUGIN_PATH=" + bins.pluginDir,
		"FAKEACP_PROFILE=opencode", "FAKEACP_STATE=" + tmp + "/agent-state",
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(out); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("transcript line %q: %v", sc.Text(), err)
			}
			events = append(events, ev)
		}
	}
	return exit, errb.String(), events, ws
}

func TestProbeRejectsAndRecords(t *testing.T) {
	exit, stderr, events, ws := probe(t, "--prompt", "Create out.txt containing hello using the shell.")
	if exit != 0 {
		t.Fatalf("exit %d: %s", exit, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); !os.IsNotExist(err) {
		t.Errorf("the probe let the agent write out.txt (%v)", err)
	}
	var types []string
	var resp map[string]any
	for _, ev := range events {
		types = append(types, ev["event"].(string))
		if ev["event"] == "permission.response" {
			resp = ev
		}
	}
	got := strings.Join(types, ",")
	for _, want := range []string{"session.start", "tool.call", "permission.request", "permission.response", "tool.call_update"} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %s: %s", want, got)
		}
	}
	if !strings.HasSuffix(got, "session.end") {
		t.Errorf("session.end is not last: %s", got)
	}
	if resp["option_id"] != "reject" || resp["kind"] != "reject" {
		t.Errorf("permission.response %v", resp)
	}
}

func TestProbeDefaultPromptAndUsage(t *testing.T) {
	exit, stderr, events, _ := probe(t)
	if exit != 0 || len(events) == 0 || events[len(events)-1]["stop_reason"] != "end_turn" {
		t.Fatalf("exit %d, events %v: %s", exit, events, stderr)
	}
	cmd := exec.Command(bins.avenor, "probe")
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--out is required") {
		t.Errorf("probe without --out: %v: %s", err, out)
	}
}
