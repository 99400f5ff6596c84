package hosttest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/avenor-go/avenor/client"
)

// TestFleetSpawnsAcrossNodes: one JetStream server in the test process,
// two node agents as real `avenor stable --fleet` processes, 20 spawns
// through `avenor fleet serve`: each node stays within --max-runtimes,
// both take work, every runtime completes, and every fleet stream is
// seq 1..n under its fleet id, as long as the node's own NDJSON log.
func TestFleetSpawnsAcrossNodes(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	n1 := w.startNode(url, "n1", "--max-runtimes", "2")
	n2 := w.startNode(url, "n2", "--max-runtimes", "2")
	_, sock := w.startFleetServe(url)
	c := fleetClient(t, sock, "n1", "n2")

	pw := watchPeaks(t, n1, n2)
	sps := spawnMany(t, c, 20, client.SpawnParams{Backend: "scripted", Prompt: "chunks 8 every=40ms"})
	for _, sp := range sps {
		waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	}
	peaks := pw.finish()
	for name, p := range peaks {
		if p > 2 {
			t.Errorf("node %s ran %d runtimes at once, --max-runtimes 2", name, p)
		}
	}
	per := nodesOf(sps)
	if per["n1"] == 0 || per["n2"] == 0 || per["n1"]+per["n2"] != 20 {
		t.Errorf("spawns per node %v, want both nodes working and 20 in all", per)
	}
	for _, sp := range sps {
		evs := fleetStream(t, sock, sp.RuntimeID)
		local := checkStream(t, sp.OnEvent, strings.SplitN(sp.RuntimeID, "/", 2)[1])
		if len(local) != len(evs) {
			t.Errorf("%s: %d events in the fleet stream, %d in the node's log", sp.RuntimeID, len(evs), len(local))
		}
		rt := runtimeOf(t, c, sp.RuntimeID)
		if rt.RuntimeID != sp.RuntimeID || rt.StopReason != "end_turn" {
			t.Errorf("%s: status through the fleet: %s", sp.RuntimeID, rt.Raw)
		}
	}
	t.Logf("spawns per node %v, peak running %v", per, peaks)
}

// TestFleetBadInput: a fleet URL that does not answer, wrong credentials
// and a stream made by an incompatible version each stop `avenor stable
// --fleet` and `avenor fleet serve` with a clear error, before anything
// started: no control socket appears.
func TestFleetBadInput(t *testing.T) {
	w := newWorld(t)
	// A port nothing listens on: bind one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "nats://" + ln.Addr().String()
	ln.Close()

	auth := natsServer(t, &server.Options{Username: "avenor", Password: "right"})
	wrong := fmt.Sprintf("nats://avenor:wrong@127.0.0.1:%d", auth.Addr().(*net.TCPAddr).Port)

	plain := natsServer(t, &server.Options{})
	nc, err := nats.Connect(plain.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// What a different version (or a hand-made stream) would leave: the
	// name, but limits retention and no schema.
	if _, err := js.CreateStream(ctxT(t, 5*time.Second), jetstream.StreamConfig{Name: "AVENOR_SPAWNS_V1", Subjects: []string{"avenor.spawn.*"}}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, url string
		want      []string
	}{
		{"no server", dead, []string{"no NATS server answers", ln.Addr().String(), "avenor fleet dev"}},
		{"wrong credentials", wrong, []string{"refused the credentials", "nats://***@127.0.0.1", "--fleet-creds"}},
		{"incompatible stream", plain.ClientURL(), []string{"AVENOR_SPAWNS_V1", "incompatible fleet stream", "schema none", "nats stream rm AVENOR_SPAWNS_V1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"stable", "--control-socket", filepath.Join(w.tmp, "n.sock"), "--fleet", tc.url, "--node", "n1"},
				{"fleet", "serve", "--nats", tc.url, "--control-socket", filepath.Join(w.tmp, "n.sock")},
			} {
				r := w.run(args...)
				if r.code != 1 {
					t.Fatalf("%v: %v, want exit 1", args[:2], r)
				}
				for _, s := range tc.want {
					if !strings.Contains(r.stderr, s) {
						t.Errorf("%v: stderr %q lacks %q", args[:2], r.stderr, s)
					}
				}
				if strings.Contains(r.stderr, "wrong@") {
					t.Errorf("the password leaked into the error: %q", r.stderr)
				}
				if _, err := os.Stat(filepath.Join(w.tmp, "n.sock")); err == nil {
					t.Errorf("%v: a control socket was created", args[:2])
				}
			}
		})
	}
	// The refused stream was left as it was.
	s, err := js.Stream(ctxT(t, 5*time.Second), "AVENOR_SPAWNS_V1")
	if err != nil || s.CachedInfo().Config.Retention != jetstream.LimitsPolicy {
		t.Errorf("the incompatible stream was changed: %v", err)
	}
}

// TestFleetControlCLI: `avenor control` and `avenor await` work on a fleet
// socket unchanged: spawn, list, status (a runtime and the fleet), tail,
// cancel, answer-permission and await, against `avenor fleet serve` with
// two node agents; result through the Go client.
func TestFleetControlCLI(t *testing.T) {
	ns := natsServer(t, &server.Options{})
	w := newWorld(t)
	url := ns.ClientURL()
	n1 := w.startNode(url, "n1", "--max-runtimes", "2")
	n2 := w.startNode(url, "n2", "--max-runtimes", "2")
	fs, sock := w.startFleetServe(url)
	// logs are the fleet's stderr, for a failure that is about routing.
	logs := func() string {
		return fmt.Sprintf("\nfleet serve: %s\nn1: %s\nn2: %s", tail(fs.stderr.String(), 1500), tail(n1.stderr.String(), 1500), tail(n2.stderr.String(), 1500))
	}
	c := fleetClient(t, sock, "n1", "n2")
	ctl := func(args ...string) result {
		t.Helper()
		r := w.run(append([]string{"control", "--socket", sock}, args...)...)
		if r.code != 0 {
			t.Fatalf("avenor control %v: %v", args, r)
		}
		return r
	}
	var sp client.Spawned
	r := ctl("spawn", "--backend", "scripted", "--prompt", "say hello from the fleet", "--label", "cli-done")
	if err := json.Unmarshal([]byte(r.stdout), &sp); err != nil || !strings.Contains(sp.RuntimeID, "/rt_") {
		t.Fatalf("spawn printed %q (%v), want a fleet runtime id", r.stdout, err)
	}
	// await by runtime id: the turn completes, output printed.
	aw := w.run("await", sp.RuntimeID, "--socket", sock, "--until", "done", "--timeout", "30s", "--print-output")
	if aw.code != 0 || !strings.Contains(aw.stdout, "END done "+sp.RuntimeID) || !strings.Contains(aw.stdout, "hello from the fleet") {
		t.Errorf("await %s: %v%s", sp.RuntimeID, aw, logs())
	}
	var res struct {
		RuntimeID   string `json:"runtime_id"`
		FinalOutput string `json:"final_output"`
	}
	if err := c.Call(ctxT(t, 10*time.Second), "result", map[string]any{"runtime_id": sp.RuntimeID}, &res); err != nil || !strings.Contains(res.FinalOutput, "hello from the fleet") {
		t.Errorf("result through the fleet: %+v, %v", res, err)
	}
	var st client.Runtime
	r = ctl("status", sp.RuntimeID)
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.RuntimeID != sp.RuntimeID || st.StopReason != "end_turn" {
		t.Errorf("status %s printed %q", sp.RuntimeID, r.stdout)
	}
	var fl struct {
		Fleet bool     `json:"fleet"`
		Nodes []string `json:"nodes"`
	}
	r = ctl("status")
	if err := json.Unmarshal([]byte(r.stdout), &fl); err != nil || !fl.Fleet || len(fl.Nodes) != 2 {
		t.Errorf("fleet status printed %q", r.stdout)
	}

	// tail sees every runtime's events; a long turn, then cancel.
	tailer := w.start(nil, "control", "--socket", sock, "tail")
	time.Sleep(300 * time.Millisecond) // tail subscribed (new events only)
	r = ctl("spawn", "--backend", "scripted", "--prompt", "chunks 200 every=50ms")
	var long client.Spawned
	if err := json.Unmarshal([]byte(r.stdout), &long); err != nil {
		t.Fatal(err)
	}
	waitRuntime(t, c, long.RuntimeID, 10*time.Second, "streaming", func(rt client.Runtime) bool { return rt.LatestSeq >= 5 })
	r = ctl("list")
	var list []client.Runtime
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("list printed %q, want both runtimes", r.stdout)
	}
	for _, l := range list {
		if l.RuntimeID != sp.RuntimeID && l.RuntimeID != long.RuntimeID {
			t.Errorf("list names %s", l.RuntimeID)
		}
	}
	r = ctl("cancel", long.RuntimeID)
	if !strings.Contains(r.stdout, "cancelled") {
		t.Errorf("cancel printed %q", r.stdout)
	}
	waitEnded(t, c, long.RuntimeID, 20*time.Second)
	aw = w.run("await", long.RuntimeID, "--socket", sock, "--until", "done", "--timeout", "20s")
	if !strings.Contains(aw.stdout, long.RuntimeID) || aw.code == 0 && !strings.Contains(aw.stdout, "END") {
		t.Errorf("await of the cancelled runtime: %v", aw)
	}

	// A permission: await stops at it (exit 20), answer-permission through
	// the fleet, await then sees the end.
	r = ctl("spawn", "--backend", "scripted", "--prompt", "permission tool=write question=\"May I?\"\nsay done")
	var perm client.Spawned
	if err := json.Unmarshal([]byte(r.stdout), &perm); err != nil {
		t.Fatal(err)
	}
	aw = w.run("await", perm.RuntimeID, "--socket", sock, "--timeout", "20s")
	if aw.code != 20 || !strings.Contains(aw.stdout, "ATTENTION permission "+perm.RuntimeID) {
		t.Fatalf("await at the permission: %v%s", aw, logs())
	}
	pending := waitRuntime(t, c, perm.RuntimeID, 10*time.Second, "pending", func(rt client.Runtime) bool { return rt.PendingPermission })
	var pp struct {
		Permission struct {
			RequestID string `json:"request_id"`
		} `json:"permission"`
	}
	_ = json.Unmarshal(pending.Raw, &pp)
	r = ctl("answer-permission", pp.Permission.RequestID, "allow", perm.RuntimeID)
	if !strings.Contains(r.stdout, "permission answered") {
		t.Errorf("answer-permission printed %q", r.stdout)
	}
	aw = w.run("await", perm.RuntimeID, "--socket", sock, "--until", "done", "--timeout", "20s")
	if aw.code != 0 || !strings.Contains(aw.stdout, "END done "+perm.RuntimeID) {
		t.Errorf("await after the answer: %v%s", aw, logs())
	}

	tailer.signal(syscall.SIGTERM)
	tr := tailer.wait()
	var seenLong, seenDone bool
	for _, line := range strings.Split(tr.stdout, "\n") {
		var ev struct {
			Event     string `json:"event"`
			RuntimeID string `json:"runtime_id"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		seenLong = seenLong || ev.RuntimeID == long.RuntimeID && ev.Event == "agent.message_chunk"
		seenDone = seenDone || ev.RuntimeID == perm.RuntimeID && ev.Event == "session.end"
	}
	if !seenLong || !seenDone {
		t.Errorf("tail through the fleet missed events (long streaming %v, permission run's end %v): %s", seenLong, seenDone, tail(tr.stdout, 2000))
	}
}
