package stable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hostrun "github.com/avenor-go/avenor/host/run"

	"go.uber.org/goleak"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/plugins"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/plugintest/scripted"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSpawnParamsValidate: refused combinations are the spawn's own
// failure (-32000 with the text, as the original answers); values no spawn could
// take are invalid params (-32602) with the text as detail.
func TestSpawnParamsValidate(t *testing.T) {
	neg := -1
	for _, tc := range []struct {
		name string
		p    SpawnParams
		want string
	}{
		{"ok", SpawnParams{Prompt: "x"}, ""},
		{"none", SpawnParams{}, "prompt, prompt_file, loop_file, or team_file is required"},
		{"both", SpawnParams{Prompt: "x", PromptFile: "/f"}, "prompt and prompt_file are mutually exclusive"},
		{"loop", SpawnParams{LoopFile: "/l"}, ""},
		{"loop+team", SpawnParams{LoopFile: "/l", TeamFile: "/t"}, "loop_file and team_file are mutually exclusive"},
		{"roster", SpawnParams{Prompt: "x", RosterFile: "r.json", RosterEntry: "e"}, ""},
		{"roster loop", SpawnParams{LoopFile: "/l", RosterFile: "r.json"}, ""},
		{"entry alone", SpawnParams{Prompt: "x", RosterEntry: "e"}, "roster_entry requires roster_file"},
		{"file alone", SpawnParams{Prompt: "x", RosterFile: "r.json"}, "roster_file requires roster_entry (or a loop_file or team_file whose phases set roster_entry)"},
		{"entry loop", SpawnParams{LoopFile: "/l", RosterFile: "r.json", RosterEntry: "e"}, "roster_entry cannot be used with loop_file or team_file (set roster_entry on the phases)"},
		{"entry backend", SpawnParams{Prompt: "x", RosterFile: "r.json", RosterEntry: "e", Backend: "echo"}, "roster_entry and backend are mutually exclusive"},
		{"retries", SpawnParams{Prompt: "x", MaxRetries: &neg}, "-32602 max_retries must not be negative, got -1"},
		{"handler", SpawnParams{Prompt: "x", PermissionHandler: "http://x"}, "-32602 permission_handler supports file:<path> only"},
		{"timeout", SpawnParams{Prompt: "x", Timeout: json.RawMessage(`"soon"`)}, `-32602 timeout "soon": want a number of seconds (600) or a Go duration string ("10m")`},
	} {
		err := tc.p.Validate()
		got := ""
		if err != nil {
			var ce *control.Error
			if errors.As(err, &ce) {
				got = fmt.Sprintf("%d %v", ce.Code, ce.Data.(map[string]any)["detail"])
			} else {
				got = err.Error()
			}
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestIdempotencyHashIgnoresKeyAndTimeoutSpelling(t *testing.T) {
	a := SpawnParams{Prompt: "x", Timeout: json.RawMessage("600"), IdempotencyKey: "a"}
	b := SpawnParams{Prompt: "x", Timeout: json.RawMessage(`"10m"`), IdempotencyKey: "b"}
	c := SpawnParams{Prompt: "y", Timeout: json.RawMessage("600")}
	if spawnHash(a) != spawnHash(b) || spawnHash(a) == spawnHash(c) {
		t.Fatal("hash: same params must match, others not")
	}
}

func TestIdempotencyStore(t *testing.T) {
	now := time.Unix(1000, 0)
	s := newIdemStore(func() time.Time { return now })
	s.capacity = 2
	ctx := context.Background()
	stored, finish, err := s.begin(ctx, "k1", "h1")
	if err != nil || stored != nil {
		t.Fatal(stored, err)
	}
	// A second spawn with the key waits for the first.
	got := make(chan map[string]any, 1)
	go func() {
		res, _, _ := s.begin(ctx, "k1", "h1")
		got <- res
	}()
	time.Sleep(20 * time.Millisecond)
	finish(map[string]any{"runtime_id": "rt_1"})
	if res := <-got; res["runtime_id"] != "rt_1" {
		t.Fatalf("waiting spawn got %v", res)
	}
	if _, _, err := s.begin(ctx, "k1", "other"); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatal(err)
	}
	// A failed spawn frees its key.
	_, finish, _ = s.begin(ctx, "k2", "h")
	finish(nil)
	_, finish, err = s.begin(ctx, "k2", "h")
	if err != nil {
		t.Fatal(err)
	}
	finish(map[string]any{"runtime_id": "rt_2"})
	// Full: a new key evicts the oldest finished one (eviction in detail:
	// TestIdempotencyStoreEvicts).
	now = now.Add(time.Second)
	if stored, finish, err := s.begin(ctx, "k3", "h"); err != nil || stored != nil {
		t.Fatalf("full store: %v %v", stored, err)
	} else {
		finish(map[string]any{"runtime_id": "rt_3"})
	}
	if stored, _, err := s.begin(ctx, "k2", "h"); err != nil || stored["runtime_id"] != "rt_2" {
		t.Fatalf("k2 after k3: %v %v", stored, err)
	}
	now = now.Add(IdempotencyTTL + time.Second)
	if stored, finish, err := s.begin(ctx, "k1", "h"); err != nil || stored != nil {
		t.Fatalf("after the TTL: %v %v", stored, err)
	} else {
		finish(nil)
	}
}

// inProcess serves the scripted backend in process over real gRPC.
func inProcess(launches *atomic.Int32) Resolver {
	return func(dir string, set map[string]any) (Backend, error) {
		st, _, err := config.Load(config.Sources{Flags: set})
		if err != nil {
			return Backend{}, err
		}
		return Backend{Settings: st, Backend: hostrt.Backend{Name: st.Backend, StateDir: filepath.Join(dir, "state"), Launch: func(ctx context.Context) (*plugins.Launched, error) {
			launches.Add(1)
			c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, scripted.New())
			if err != nil {
				return nil, err
			}
			b, _ := c.Backend("scripted")
			return &plugins.Launched{Client: c, Backend: b, Found: plugins.Found{Family: "scripted", Path: "in-process"}}, nil
		}}}, nil
	}
}

// The supervisor in process: spawn, a follow-up in the kept plugin (no
// second launch), the all-runtime subscription, send_to_parent, shutdown;
// nothing leaks.
func TestSupervisorInProcess(t *testing.T) {
	dir, err := os.MkdirTemp("", "avs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	var launches atomic.Int32
	sup, err := New(Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, Home: dir, Resolve: inProcess(&launches)})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan string, 1)
	go func() {
		reason, _ := sup.Serve(context.Background())
		served <- reason
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c *client.Client
	for c == nil {
		if c, err = client.Dial(ctx, filepath.Join(dir, "s.sock")); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer c.Close()
	all, err := sup.SubscribeAll()
	if err != nil {
		t.Fatal(err)
	}
	parent, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "announce"})
	if err != nil {
		t.Fatal(err)
	}
	child, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say hi", ParentID: parent.RuntimeID})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded := func(id string, runs int) client.Runtime {
		for {
			rt, err := c.Runtime(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var extra struct {
				Runs int `json:"runs"`
			}
			_ = json.Unmarshal(rt.Raw, &extra)
			if rt.Parked && extra.Runs == runs {
				return rt
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitEnded(parent.RuntimeID, 1)
	waitEnded(child.RuntimeID, 1)
	if err := c.Prompt(ctx, "announce", parent.RuntimeID); err != nil {
		t.Fatal(err)
	}
	rt := waitEnded(parent.RuntimeID, 2)
	if !strings.Contains(rt.FinalOutput, "turn 2") || launches.Load() != 2 {
		t.Fatalf("follow-up: %s after %d launches", rt.Raw, launches.Load())
	}
	if p, _ := c.Runtime(ctx, parent.RuntimeID); len(p.Children) != 1 || p.Children[0] != child.RuntimeID {
		t.Fatalf("children: %s", p.Raw)
	}
	reqID, err := c.SendToParent(ctx, child.RuntimeID, "which file?")
	if err != nil || reqID != "cq_1" {
		t.Fatalf("send_to_parent: %q %v", reqID, err)
	}
	seen := map[string]bool{}
	for !seen["child.question"] {
		select {
		case ev := <-all.C():
			seen[ev.Type().String()] = true
			if ev.Type() == "child.question" && (ev["runtime_id"] != parent.RuntimeID || ev["child_id"] != child.RuntimeID) {
				t.Fatalf("child.question %v", ev)
			}
		case <-ctx.Done():
			t.Fatalf("no child.question; saw %v", seen)
		}
	}
	if err := c.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if reason := <-served; reason != ReasonShutdown {
		t.Fatalf("reason %q", reason)
	}
	for range all.C() {
	}
	all.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "s.sock.dead")); !strings.HasPrefix(string(b), "STOPPED reason=shutdown pid=") {
		t.Fatalf("tombstone %q", b)
	}
}

// inProcessScope is the scripted backend claiming resume scope in_process:
// only its live plugin can continue a session.
type inProcessScope struct{ sdk.Backend }

func (b inProcessScope) Info() sdk.BackendInfo {
	info := b.Backend.Info()
	info.ResumeScope = sdk.ResumeInProcess
	return info
}

// A parked in_process runtime continues in its kept plugin; once that
// plugin is gone, a follow-up is refused, saying why.
func TestInProcessSessionLost(t *testing.T) {
	dir, err := os.MkdirTemp("", "avs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	resolve := func(d string, set map[string]any) (Backend, error) {
		st, _, err := config.Load(config.Sources{Flags: set})
		return Backend{Settings: st, Backend: hostrt.Backend{Name: st.Backend, StateDir: filepath.Join(d, "state"), Launch: func(ctx context.Context) (*plugins.Launched, error) {
			c, err := plugin.ServeInProcess(ctx, plugin.Info{Name: "scripted", Version: "test"}, nil, inProcessScope{scripted.New()})
			if err != nil {
				return nil, err
			}
			b, _ := c.Backend("scripted")
			return &plugins.Launched{Client: c, Backend: b}, nil
		}}}, err
	}
	sup, err := New(Config{SocketPath: filepath.Join(dir, "s.sock"), TempDir: dir, MaxKeptPlugins: 2, Resolve: resolve})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_, _ = sup.Serve(ctx)
	}()
	defer func() { cancel(); <-served }()
	var c *client.Client
	for c == nil {
		if c, err = client.Dial(context.Background(), filepath.Join(dir, "s.sock")); err != nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer c.Close()
	ended := func(id string) client.Runtime {
		for {
			rt, err := c.Runtime(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rt.Parked {
				return rt
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var ids []string
	for i := 0; i < 2; i++ { // two: both keep their plugin (MaxKeptPlugins 2)
		sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say one"})
		if err != nil {
			t.Fatal(err)
		}
		if rt := ended(sp.RuntimeID); rt.Status != hostrun.StatusIdle {
			t.Fatalf("parked runtime with its kept plugin lists %q, want idle (it takes follow-ups)", rt.Status)
		}
		ids = append(ids, sp.RuntimeID)
	}
	if err := c.Prompt(ctx, "say two", ids[0]); err != nil {
		t.Fatalf("follow-up in the kept plugin: %v", err)
	}
	for ended(ids[0]).FinalOutput != "two" {
		time.Sleep(10 * time.Millisecond)
	}
	var held *hostrt.HeldSession
	sup.mu.Lock()
	for _, k := range sup.kept {
		if k.rt.id == ids[0] {
			held = k.held
		}
	}
	sup.mu.Unlock()
	if held == nil {
		t.Fatal("no kept plugin")
	}
	held.Plugin().Client.Kill()
	// The loss shows in the runtime's entry at once, before any follow-up;
	// the stream gets nothing after its session.end (docs/events.md#the-envelope).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rt, err := c.Runtime(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(rt.Raw), `"session_lost":"its plugin scripted exited while the runtime was parked"`) {
			if rt.Status != hostrun.StatusEnded {
				t.Fatalf("a runtime whose in_process session was lost lists %q, want ended (it takes no prompt)", rt.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session_lost after the kept plugin died: %s", rt.Raw)
		}
	}
	err = c.Prompt(ctx, "say three", ids[0])
	if err == nil || !strings.Contains(err.Error(), "session lost") || !strings.Contains(err.Error(), "in_process") {
		t.Fatalf("follow-up after the plugin died: %v", err)
	}
	// A spawn resuming the other runtime's session takes over its plugin.
	sid := ended(ids[1]).SessionID
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say resumed", SessionID: sid})
	if err != nil || sp.SessionID != sid {
		t.Fatalf("spawn with session_id: %v %s", err, sp.Raw)
	}
	if rt := ended(sp.RuntimeID); rt.FinalOutput != "resumed" || *rt.ExitCode != 0 {
		t.Fatalf("resumed runtime: %s", rt.Raw)
	}
	if err := c.Prompt(ctx, "say two", ids[1]); err == nil || !strings.Contains(err.Error(), "continues in runtime "+sp.RuntimeID) {
		t.Fatalf("prompt of the runtime whose session moved: %v", err)
	}
	if rt := ended(ids[1]); rt.Status != hostrun.StatusEnded {
		t.Fatalf("a runtime whose session moved lists %q, want ended", rt.Status)
	}
}
