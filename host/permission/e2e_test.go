package permission_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
)

// End to end over the built binaries: bin/avenor runs the scripted plugin,
// whose prompt asks one permission after a tool call, and a harness answers
// it the ways a real one would.

var bins struct {
	once sync.Once
	dir  string
	err  error
}

func cleanupBinaries() {
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
}

// binaries builds avenor and avenor-plugin-scripted once into one directory
// and returns it (it is also the plugin path).
func binaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds avenor and the scripted plugin")
	}
	bins.once.Do(func() {
		if bins.dir, bins.err = os.MkdirTemp("", "avenor-permission-e2e-"); bins.err != nil {
			return
		}
		for _, b := range []struct{ out, pkg string }{
			{"avenor", "github.com/avenor-go/avenor/cmd/avenor"},
			{"avenor-plugin-scripted", "github.com/avenor-go/avenor/sdk/plugintest/scripted/cmd/avenor-plugin-scripted"},
		} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(bins.dir, b.out), b.pkg).CombinedOutput()
			if err != nil {
				bins.err = errors.New("go build " + b.pkg + ": " + err.Error() + "\n" + string(out))
				return
			}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.dir
}

// job is one avenor run in its own directory with isolated XDG dirs.
type job struct {
	t        *testing.T
	bin, dir string
	env      []string
}

func newJob(t *testing.T) *job {
	bin := binaries(t)
	dir := t.TempDir()
	j := &job{t: t, bin: bin, dir: dir}
	j.env = append(os.Environ(), "AVENOR_PLUGIN_PATH="+bin,
		"XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"), "XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"),
		"XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"), "XDG_CACHE_HOME="+filepath.Join(dir, "xdg-cache"))
	return j
}

func (j *job) path(name string) string { return filepath.Join(j.dir, name) }

const askScript = "tool \"go test ./...\" kind=bash\npermission tool=bash question=\"Run the tests?\"\nsay done"

// start runs `avenor --backend scripted` with the script and extra args.
func (j *job) start(env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	j.t.Helper()
	full := append([]string{"--backend", "scripted", "--dir", j.dir, "--prompt", askScript,
		"--on-event", j.path("events.ndjson"), "--sentinel-file", j.path("run.done")}, args...)
	cmd := exec.Command(filepath.Join(j.bin, "avenor"), full...)
	cmd.Env = append(append([]string{}, j.env...), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		j.t.Fatal(err)
	}
	return cmd, &stderr
}

func exitCode(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("avenor did not end; stderr:\n%s", stderr)
		return -1
	}
}

func (j *job) events() []map[string]any {
	j.t.Helper()
	f, err := os.Open(j.path("events.ndjson"))
	if err != nil {
		j.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			j.t.Fatalf("bad event line %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// checkOrder asserts tool.call < permission.request < the rest, in the log.
func checkOrder(t *testing.T, evs []map[string]any, want ...string) map[string]map[string]any {
	t.Helper()
	byType := map[string]map[string]any{}
	at := 0
	var types []string
	for _, ev := range evs {
		typ, _ := ev["event"].(string)
		types = append(types, typ)
		if _, seen := byType[typ]; !seen {
			byType[typ] = ev
		}
		if at < len(want) && typ == want[at] {
			at++
		}
	}
	if at < len(want) {
		t.Fatalf("events %v do not hold %v in this order", types, want)
	}
	return byType
}

func sentinel(t *testing.T, j *job) string {
	data, err := os.ReadFile(j.path("run.done"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestE2EAutoApprove(t *testing.T) {
	j := newJob(t)
	cmd, stderr := j.start(nil, "--auto-approve")
	if code := exitCode(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	ev := checkOrder(t, j.events(), "tool.call", "tool.call_update", "permission.request", "permission.response", "agent.message_chunk", "session.end")
	if r := ev["permission.request"]; r["resolver"] != "automatic" || r["tool"] != "bash" || r["question"] != "Run the tests?" {
		t.Errorf("permission.request = %v", r)
	}
	if r := ev["permission.response"]; r["source"] != "avenor" || r["kind"] != "allow" || r["option_id"] != "allow" {
		t.Errorf("permission.response = %v", r)
	}
	if c := ev["agent.message_chunk"]["content"].(map[string]any)["text"]; c != "permission allow (allow_once)" {
		t.Errorf("the plugin said %q", c)
	}
	if _, err := os.Stat(j.path("run.perm.req")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("auto-approve wrote a .req: %v", err)
	}
}

func TestE2EHarnessWritesResponse(t *testing.T) {
	j := newJob(t)
	// A stale answer of an earlier run must not be taken.
	writeResponse(t, j.path("run.perm.req.response"), `{"option_id":"allow"}`)
	cmd, stderr := j.start(nil)
	waitFile(t, j.path("run.perm.req"))
	req, err := permission.ReadRequest(j.path("run.perm"))
	if err != nil {
		t.Fatal(err)
	}
	if req.RequestID == "" || !strings.HasPrefix(req.SessionID, "scr_") || req.Tool != "bash" || len(req.Options) != 2 ||
		req.Payload["event"] != "permission.request" || req.Payload["resolver"] != "file" {
		t.Errorf(".req = %+v", req)
	}
	writeResponse(t, j.path("run.perm.req.response"), `{"outcome":"selected","option_id":"deny","message":"not now"}`)
	if code := exitCode(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	ev := checkOrder(t, j.events(), "tool.call", "permission.request", "permission.response", "agent.message_chunk", "session.end")
	if r := ev["permission.request"]; r["resolver"] != "file" || r["request_id"] != req.RequestID || r["session_id"] != req.SessionID {
		t.Errorf("permission.request = %v", r)
	}
	if r := ev["permission.response"]; r["source"] != "file" || r["kind"] != "reject" || r["option_id"] != "deny" {
		t.Errorf("permission.response = %v", r)
	}
	if c := ev["agent.message_chunk"]["content"].(map[string]any)["text"]; c != "permission deny (reject)" {
		t.Errorf("the plugin said %q", c)
	}
	if s := sentinel(t, j); !strings.HasPrefix(s, "DONE\n") {
		t.Errorf("sentinel = %q", s)
	}
}

func TestE2EAvenorAnswer(t *testing.T) {
	j := newJob(t)
	base := j.path("explicit")
	// An explicit handler wins over the one derived from the sentinel.
	cmd, stderr := j.start(nil, "--permission-handler", "file:"+base)
	waitFile(t, base+".req")
	ans := exec.Command(filepath.Join(j.bin, "avenor"), "answer", "--option", "allow", "--message", "go ahead", base)
	ans.Env = j.env
	if out, err := ans.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer: %v\n%s", err, out)
	}
	if code := exitCode(t, cmd, stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	ev := checkOrder(t, j.events(), "tool.call", "permission.request", "permission.response", "session.end")
	if r := ev["permission.response"]; r["source"] != "file" || r["kind"] != "allow" || r["option_id"] != "allow" {
		t.Errorf("permission.response = %v", r)
	}
	if _, err := os.Stat(j.path("run.perm.req")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the derived handler was used too: %v", err)
	}
	// Answering again needs --force.
	again := exec.Command(filepath.Join(j.bin, "avenor"), "answer", "--option", "allow", base)
	out, err := again.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || string(out) != "avenor answer: response already exists at "+base+".req.response; pass --force to overwrite\n" {
		t.Errorf("second answer = %v, %q", err, out)
	}
}

func TestE2ETimeout(t *testing.T) {
	j := newJob(t)
	cmd, stderr := j.start([]string{"AVENOR_PERMISSION_FILE_TIMEOUT=400ms"})
	waitFile(t, j.path("run.perm.req"))
	if code := exitCode(t, cmd, stderr); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(j.path("run.perm.req")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".req still on disk after the timeout: %v", err)
	}
	ev := checkOrder(t, j.events(), "tool.call", "permission.request", "avenor.error", "session.end")
	want := "permission handler: no answer to request " + ev["permission.request"]["request_id"].(string) +
		" in " + j.path("run.perm.req.response") + " within 400ms"
	if e := ev["avenor.error"]; e["source"] != "permission" || e["message"] != want {
		t.Errorf("avenor.error = %v, want message %q", e, want)
	}
	if _, ok := ev["permission.response"]; ok {
		t.Error("a timed-out request got a permission.response")
	}
	if e := ev["session.end"]; e["stop_reason"] != "error" {
		t.Errorf("session.end = %v", e)
	}
	if s := sentinel(t, j); !strings.HasPrefix(s, "FAILED\n") || !strings.Contains(s, "EXIT_CODE=1\n") {
		t.Errorf("sentinel = %q", s)
	}
	if !strings.Contains(stderr.String(), "avenor: "+want) {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestE2ECancelled(t *testing.T) {
	j := newJob(t)
	cmd, stderr := j.start(nil)
	waitFile(t, j.path("run.perm.req"))
	ans := exec.Command(filepath.Join(j.bin, "avenor"), "answer", "--option", "allow", "--outcome", "cancelled", j.path("run.perm"))
	if out, err := ans.CombinedOutput(); err != nil {
		t.Fatalf("avenor answer: %v\n%s", err, out)
	}
	if code := exitCode(t, cmd, stderr); code != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", code, stderr)
	}
	ev := checkOrder(t, j.events(), "tool.call", "permission.request", "permission.response", "session.end")
	if r := ev["permission.response"]; r["source"] != "file" || r["outcome"] != "cancelled" || r["kind"] != "unknown" {
		t.Errorf("permission.response = %v", r)
	}
	if e := ev["session.end"]; e["stop_reason"] != "cancelled" {
		t.Errorf("session.end = %v", e)
	}
	s := sentinel(t, j)
	if !strings.HasPrefix(s, "KILLED\n") || !strings.Contains(s, "STOP_REASON=cancelled\nEXIT_CODE=130\n") {
		t.Errorf("sentinel = %q", s)
	}
}

func TestE2EHandlerScheme(t *testing.T) {
	j := newJob(t)
	cmd, stderr := j.start(nil, "--permission-handler", "http://localhost:1")
	if code := exitCode(t, cmd, stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if stderr.String() != "avenor: --permission-handler supports file:<path> only\n" {
		t.Errorf("stderr = %q", stderr)
	}
	if s := sentinel(t, j); !strings.HasPrefix(s, "FAILED\n") {
		t.Errorf("sentinel = %q", s)
	}
}
