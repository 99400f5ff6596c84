package hosttest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// A Go client's auto_approve:false reaches the supervisor even
// over a config that says true, and the spawn is not auto-approved.
func TestStableSpawnAutoApproveFalseOverConfig(t *testing.T) {
	w := newWorld(t)
	w.userConfig("auto_approve = true\n")
	s := w.startStable("aa", nil)
	c := s.client()
	log := w.path("aa-events.ndjson")
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: geminiLike,
		OnEvent: log, SentinelFile: w.path("aa-run.done"), AutoApprove: client.Bool(false)})
	waitForLog(t, log, `"event":"permission.request"`, 10*time.Second)
	// An auto-approval answers at once; give it the time it would take.
	time.Sleep(300 * time.Millisecond)
	if resp := only(readEvents(t, log), "permission.response"); len(resp) != 0 {
		t.Fatalf("auto_approve:false over a config saying true was auto-approved: %v", resp)
	}
	if err := c.Cancel(ctxT(t, 5*time.Second), sp.RuntimeID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	waitEnded(t, c, sp.RuntimeID, 10*time.Second)

	// And auto_approve:true still approves, over a config saying false.
	w2 := newWorld(t)
	w2.userConfig("auto_approve = false\n")
	c2 := w2.startStable("ab", nil).client()
	log2 := w2.path("ab-events.ndjson")
	sp2 := spawn(t, c2, client.SpawnParams{Backend: "scripted", Dir: w2.work, Prompt: geminiLike,
		OnEvent: log2, AutoApprove: client.Bool(true)})
	waitEnded(t, c2, sp2.RuntimeID, 10*time.Second)
	resp := only(readEvents(t, log2), "permission.response")
	if len(resp) != 1 || resp[0].str("source") != "avenor" || !strings.HasPrefix(resp[0].str("option_id"), "proceed_once") {
		t.Errorf("auto_approve:true: permission.response = %v; want proceed_once from avenor", resp)
	}
}

// altPlugin puts avenor-plugin-alt on the world's AVENOR_PLUGIN_PATH: a
// wrapper that records each start in the returned file, then execs the echo
// plugin (so it serves backend echo). A config mapping a backend to family
// alt shows whether a command honoured [backends.X] plugin.
func altPlugin(t *testing.T, w *world) (marker string) {
	t.Helper()
	marker = w.path("alt.starts")
	w.writeFile("alt/avenor-plugin-alt", "#!/bin/sh\necho \"$@\" >> "+marker+"\nexec "+
		filepath.Join(bins.pluginDir, "avenor-plugin-echo")+" \"$@\"\n")
	if err := os.Chmod(w.path("alt/avenor-plugin-alt"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, kv := range w.env {
		if strings.HasPrefix(kv, "AVENOR_PLUGIN_PATH=") {
			w.env[i] = kv + string(os.PathListSeparator) + w.path("alt")
		}
	}
	return marker
}

// [backends.X] plugin applies in every command that finds a
// backend's plugin: run, probe, backends, claude-channel and stable spawns.
func TestBackendPluginMappingEverywhere(t *testing.T) {
	mapped := func(t *testing.T, backend string) (*world, string) {
		w := newWorld(t)
		marker := altPlugin(t, w)
		w.userConfig(fmt.Sprintf("[backends.%s]\nplugin = \"alt\"\n", backend))
		return w, marker
	}
	started := func(t *testing.T, marker string) {
		t.Helper()
		if data, err := os.ReadFile(marker); err != nil || len(data) == 0 {
			t.Errorf("the mapped plugin avenor-plugin-alt never started (%v)", err)
		}
	}
	t.Run("run", func(t *testing.T) {
		w, marker := mapped(t, "echo")
		if res := w.run("--backend", "echo", "--prompt", "hi", "--on-event", w.path("ev.ndjson")); res.code != 0 {
			t.Fatalf("%v", res)
		}
		started(t, marker)
	})
	t.Run("probe", func(t *testing.T) {
		w, marker := mapped(t, "opencode-acp")
		// The echo plugin behind alt does not serve opencode-acp: the probe
		// fails, after starting the mapped binary.
		res := w.run("probe", "--out", w.path("probe.ndjson"), "--dir", w.work, "--timeout", "20s")
		if res.code == 0 || !strings.Contains(res.stderr, "does not serve backend \"opencode-acp\"") {
			t.Errorf("probe: %v; want the alt plugin's refusal", res)
		}
		started(t, marker)
	})
	t.Run("backends", func(t *testing.T) {
		w, _ := mapped(t, "echo")
		res := w.run("backends", "--json")
		if res.code != 0 {
			t.Fatalf("%v", res)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
			t.Fatalf("backends --json: %v\n%s", err, res.stdout)
		}
		var echo []string
		for _, r := range rows {
			if r["backend"] == "echo" {
				echo = append(echo, fmt.Sprint(r["plugin_path"]))
			}
		}
		if len(echo) != 1 || !strings.HasSuffix(echo[0], "/alt/avenor-plugin-alt") {
			t.Errorf("backends lists echo from %v; want only the mapped avenor-plugin-alt", echo)
		}
	})
	t.Run("claude-channel", func(t *testing.T) {
		w, marker := mapped(t, "claude-channel")
		res := w.run("claude-channel", "--run-id", "r1", "--token", "tok", "--broker-url", "http://127.0.0.1:9")
		started(t, marker)
		if data, _ := os.ReadFile(marker); !strings.Contains(string(data), "claude-channel --run-id r1 --token tok") {
			t.Errorf("claude-channel exec'd the mapped plugin with %q; %v", data, res)
		}
	})
	t.Run("stable", func(t *testing.T) {
		w, marker := mapped(t, "echo")
		c := w.startStable("map", nil).client()
		sp := spawn(t, c, client.SpawnParams{Backend: "echo", Dir: w.work, Prompt: "hi", OnEvent: w.path("map.ndjson")})
		waitEnded(t, c, sp.RuntimeID, 10*time.Second)
		started(t, marker)
	})
}

// A Go client's max_retries:0 reaches the supervisor over a
// config that sets retries, and the failing spawn is not retried; left out,
// the config's max_retries applies.
func TestStableSpawnMaxRetriesZeroOverConfig(t *testing.T) {
	w := newWorld(t)
	w.userConfig("max_retries = 2\n")
	c := w.startStable("mr", nil).client()
	for _, tc := range []struct {
		name    string
		retries *int
		want    int
	}{
		{"zero", client.Int(0), 0},
		{"config", nil, 2},
	} {
		log := w.path("mr-" + tc.name + ".ndjson")
		sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "fail x",
			OnEvent: log, MaxRetries: tc.retries})
		rt := waitEnded(t, c, sp.RuntimeID, 20*time.Second)
		if rt.ExitCode == nil || *rt.ExitCode != 1 {
			t.Fatalf("%s: want exit 1; got %s", tc.name, rt.Raw)
		}
		evs := readEvents(t, log)
		if got := len(only(evs, "avenor.retry")); got != tc.want {
			t.Errorf("%s: %d avenor.retry events, want %d", tc.name, got, tc.want)
		}
		var entry struct {
			MaxRetries int `json:"max_retries"`
		}
		if err := json.Unmarshal(rt.Raw, &entry); err != nil || entry.MaxRetries != tc.want {
			t.Errorf("%s: status max_retries = %d (%v), want %d: %s", tc.name, entry.MaxRetries, err, tc.want, rt.Raw)
		}
	}
}

// avenor probe opens its transcript as avenor run opens
// --on-event: a named pipe or a device is refused at once, naming the path
// (os.Create blocked on a pipe with no reader for ever).
func TestProbeOutNotRegular(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.userConfig("[backends.opencode-acp]\nplugin = \"echo\"\n")
	for _, tc := range []struct{ path, says string }{
		{fifo(w, "probe.fifo"), "is a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "is a character device, not a regular file"},
	} {
		start := time.Now()
		res := w.run("probe", "--out", tc.path, "--dir", w.work, "--timeout", "20s")
		if res.code != 1 || !strings.Contains(res.stderr, "--out: "+tc.path+" "+tc.says) {
			t.Errorf("probe --out %s: %v; want exit 1 saying %q", tc.path, res, tc.says)
		}
		if d := time.Since(start); d > refuseGuard {
			t.Errorf("probe --out %s took %v to refuse", tc.path, d)
		}
	}
}
