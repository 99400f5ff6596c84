package stable

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

func TestParseWarm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want WarmSpec
		bad  string
	}{
		{in: "opencode-acp=2", want: WarmSpec{Backend: "opencode-acp", Count: 2}},
		{in: " pi = 1 ", want: WarmSpec{Backend: "pi", Count: 1}},
		{in: "codex-app-server=3,dir=/src/app,model=gpt-x,agent=build,thinking=high",
			want: WarmSpec{Backend: "codex-app-server", Count: 3, Dir: "/src/app", Model: "gpt-x", Agent: "build", Thinking: "high"}},
		{in: "pi", bad: "no backend=count"},
		{in: "=2", bad: "no backend=count"},
		{in: "pi=0", bad: "from 1 to 32"},
		{in: "pi=33", bad: "from 1 to 32"},
		{in: "pi=two", bad: "from 1 to 32"},
		{in: "pi=1,dir", bad: `"dir" is not key=value`},
		{in: "pi=1,dir=", bad: `"dir=" is not key=value`},
		{in: "pi=1,colour=red", bad: `unknown key "colour"`},
		{in: "pi=1,dir=/a,dir=/b", bad: "dir given twice"},
	} {
		got, err := ParseWarm(tc.in)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "BACKEND=N") {
				t.Errorf("ParseWarm(%q) = %+v, %v; want an error saying %q and the form", tc.in, got, err, tc.bad)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseWarm(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if again, err := ParseWarm(got.String()); err != nil || again != got {
			t.Errorf("ParseWarm(String(%+v)) = %+v, %v", got, again, err)
		}
	}
}

func FuzzParseWarm(f *testing.F) {
	for _, s := range []string{"opencode-acp=2", "pi=1,dir=/x,model=m", "=", ",,,", "a=1,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWarm(s)
		if err != nil {
			return
		}
		if w.Backend == "" || w.Count < 1 || w.Count > MaxWarmPerPool {
			t.Fatalf("ParseWarm(%q) accepted %+v", s, w)
		}
	})
}

// warmWorld is a supervisor in process with warm pools of the scripted
// backend; launches counts plugin launches.
type warmWorld struct {
	t        *testing.T
	dir      string
	sup      *Supervisor
	c        *client.Client
	ctx      context.Context
	launches *atomic.Int32
	served   chan string
}

func newWarmWorld(t *testing.T, cfg Config) *warmWorld {
	t.Helper()
	dir, err := os.MkdirTemp("", "avw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	w := &warmWorld{t: t, dir: dir, launches: &atomic.Int32{}, served: make(chan string, 1)}
	cfg.SocketPath, cfg.TempDir, cfg.Home, cfg.Resolve = filepath.Join(dir, "s.sock"), dir, dir, inProcess(w.launches)
	for i := range cfg.Warm {
		if cfg.Warm[i].Dir == "" {
			cfg.Warm[i].Dir = dir
		}
	}
	if w.sup, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	go func() {
		reason, _ := w.sup.Serve(context.Background())
		w.served <- reason
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	w.ctx = ctx
	for w.c == nil {
		if w.c, err = client.Dial(ctx, cfg.SocketPath); err != nil {
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return w
}

// shutdown stops the supervisor and checks the reason.
func (w *warmWorld) shutdown() {
	w.t.Helper()
	if err := w.c.Shutdown(w.ctx, ""); err != nil {
		w.t.Fatal(err)
	}
	if reason := <-w.served; reason != ReasonShutdown {
		w.t.Fatalf("reason %q", reason)
	}
	w.c.Close()
}

// pools is status {}'s warm summary.
func (w *warmWorld) pools() []map[string]any {
	w.t.Helper()
	var st struct {
		Warm []map[string]any `json:"warm"`
	}
	if err := w.c.Call(w.ctx, "status", map[string]any{}, &st); err != nil {
		w.t.Fatal(err)
	}
	return st.Warm
}

// members is list {"warm":true}.
func (w *warmWorld) members() []map[string]any {
	w.t.Helper()
	var out []map[string]any
	if err := w.c.Call(w.ctx, "list", map[string]any{"warm": true}, &out); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// waitReady waits until pool i has n ready members.
func (w *warmWorld) waitReady(i, n int) {
	w.t.Helper()
	for {
		p := w.pools()
		if len(p) > i && p[i]["ready"] == float64(n) && p[i]["starting"] == float64(0) {
			return
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("pool %d never had %d ready members: %v", i, n, p)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (w *warmWorld) waitParked(id string) client.Runtime {
	w.t.Helper()
	for {
		rt, err := w.c.Runtime(w.ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if rt.Parked || rt.Status == "ended" {
			return rt
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("%s never parked: %s", id, rt.Raw)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// events reads a runtime's NDJSON log.
func events(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		out = append(out, ev)
	}
	return out
}

// TestWarmPoolServesMatchingSpawns: the pool starts its members before any
// spawn; a spawn of the pool's key takes one (no launch of its own, the
// member's session, a log that starts at session.start seq 1 with nothing
// of the warm time in it) and the pool refills; a spawn of another key
// starts cold; a member that dies is replaced; shutdown stops them all.
func TestWarmPoolServesMatchingSpawns(t *testing.T) {
	w := newWarmWorld(t, Config{MaxRuntimes: 4, Warm: []WarmSpec{{Backend: "scripted", Count: 2}}})
	w.waitReady(0, 2)
	if n := w.launches.Load(); n != 2 {
		t.Fatalf("%d launches for a pool of 2", n)
	}
	warmIDs := map[string]bool{}
	for _, m := range w.members() {
		if m["status"] != "warm" || m["backend"] != "scripted" {
			t.Fatalf("warm member %v", m)
		}
		warmIDs[m["session_id"].(string)] = true
	}
	if len(warmIDs) != 2 {
		t.Fatalf("members %v", w.members())
	}
	if list, err := w.c.List(w.ctx); err != nil || len(list) != 0 {
		t.Fatalf("list shows warm members as runtimes: %v %v", list, err)
	}

	sp, err := w.c.Spawn(w.ctx, client.SpawnParams{Backend: "scripted", Dir: w.dir, Prompt: "say hello"})
	if err != nil {
		t.Fatal(err)
	}
	rt := w.waitParked(sp.RuntimeID)
	if !warmIDs[rt.SessionID] {
		t.Fatalf("the spawn's session %s is none of the warm ones %v", rt.SessionID, warmIDs)
	}
	evs := events(t, sp.OnEvent)
	if len(evs) < 2 || evs[0]["event"] != "session.start" || evs[0]["seq"] != float64(1) || evs[0]["session_id"] != rt.SessionID ||
		evs[len(evs)-1]["event"] != "session.end" {
		t.Fatalf("log of a warm spawn: %v", evs)
	}
	if !strings.Contains(rt.FinalOutput, "hello") {
		t.Fatalf("final output %q", rt.FinalOutput)
	}
	w.waitReady(0, 2) // refilled
	if n := w.launches.Load(); n != 3 {
		t.Fatalf("%d launches after one warm spawn and its refill, want 3", n)
	}

	// Another model: not the pool's key, so a cold launch.
	other, err := w.c.Spawn(w.ctx, client.SpawnParams{Backend: "scripted", Dir: w.dir, Model: "other", Prompt: "say cold"})
	if err != nil {
		t.Fatal(err)
	}
	if rt := w.waitParked(other.RuntimeID); warmIDs[rt.SessionID] || w.launches.Load() != 4 {
		t.Fatalf("a spawn of another key: session %s, %d launches", rt.SessionID, w.launches.Load())
	}

	// A member whose plugin dies is replaced.
	w.sup.mu.Lock()
	victim := w.sup.warm.pools[0].ready[0].held
	w.sup.mu.Unlock()
	victim.Plugin().Client.Kill()
	for w.launches.Load() < 5 {
		select {
		case <-w.ctx.Done():
			t.Fatalf("the dead member was not replaced: %v", w.pools())
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.waitReady(0, 2)
	w.shutdown()
	w.sup.mu.Lock()
	left := w.sup.warm.slotsLocked()
	w.sup.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d warm members after shutdown", left)
	}
}

// TestWarmPoolYieldsToSpawns: warm members hold slots of --max-runtimes,
// but a spawn of another key is never refused for them: one stops to make
// room, and the pool refills only into free slots.
func TestWarmPoolYieldsToSpawns(t *testing.T) {
	w := newWarmWorld(t, Config{MaxRuntimes: 2, ParkedTimeout: time.Hour, Warm: []WarmSpec{{Backend: "scripted", Count: 2}}})
	w.waitReady(0, 2)
	sp, err := w.c.Spawn(w.ctx, client.SpawnParams{Backend: "scripted", Dir: w.dir, Model: "m1", Prompt: "sleep 300ms"})
	if err != nil {
		t.Fatalf("a spawn refused for warm members: %v", err)
	}
	w.sup.mu.Lock()
	held := w.sup.active + w.sup.warm.slotsLocked()
	w.sup.mu.Unlock()
	if held > 2 {
		t.Fatalf("%d slots held with --max-runtimes 2", held)
	}
	w.waitParked(sp.RuntimeID)
	w.waitReady(0, 2) // the run ended: its slot went back to the pool
	w.shutdown()
}

// TestWarmPoolIdle: a pool nobody takes from stops its members after
// WarmIdle; the next spawn of its key starts cold and wakes it.
func TestWarmPoolIdle(t *testing.T) {
	w := newWarmWorld(t, Config{MaxRuntimes: 4, WarmIdle: 200 * time.Millisecond, Warm: []WarmSpec{{Backend: "scripted", Count: 1}}})
	w.waitReady(0, 1)
	for {
		p := w.pools()
		if p[0]["dormant"] == true && p[0]["ready"] == float64(0) {
			break
		}
		select {
		case <-w.ctx.Done():
			t.Fatalf("the idle pool kept its members: %v", p)
		case <-time.After(20 * time.Millisecond):
		}
	}
	before := w.launches.Load()
	sp, err := w.c.Spawn(w.ctx, client.SpawnParams{Backend: "scripted", Dir: w.dir, Prompt: "say wake"})
	if err != nil {
		t.Fatal(err)
	}
	w.waitParked(sp.RuntimeID)
	// One cold launch for the spawn, one for the woken pool (it may go
	// idle again afterwards: 200 ms is short).
	for w.launches.Load() < before+2 {
		select {
		case <-w.ctx.Done():
			t.Fatalf("the pool did not wake: %d launches, %v", w.launches.Load()-before, w.pools())
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.shutdown()
}

// TestWarmSpecRefused: a spec that does not resolve fails New, naming it.
func TestWarmSpecRefused(t *testing.T) {
	dir := t.TempDir()
	var launches atomic.Int32
	_, err := New(Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Resolve: inProcess(&launches),
		Warm: []WarmSpec{{Backend: "scripted", Count: 1, Dir: filepath.Join(dir, "missing")}}})
	if err == nil || !strings.Contains(err.Error(), "--warm scripted=1,dir=") {
		t.Fatalf("a pool in a missing dir: %v", err)
	}
	_, err = New(Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Resolve: inProcess(&launches),
		Warm: []WarmSpec{{Backend: "scripted", Count: 1, Dir: dir}, {Backend: "scripted", Count: 2, Dir: dir}}})
	if err == nil || !strings.Contains(err.Error(), "give one pool the sum") {
		t.Fatalf("two pools of one key: %v", err)
	}
	if launches.Load() != 0 {
		t.Fatal("a refused config launched a plugin")
	}
}

// TestListParamsNotAnObject: list still ignores params that are not an
// object, as it did before `list {"warm":true}` existed.
func TestListParamsNotAnObject(t *testing.T) {
	w := newWarmWorld(t, Config{MaxRuntimes: 2})
	for _, params := range []any{[]any{}, nil} {
		var out []map[string]any
		if err := w.c.Call(w.ctx, "list", params, &out); err != nil {
			t.Fatalf("list with params %v: %v", params, err)
		}
	}
	w.shutdown()
}
