package stable

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	hostrun "github.com/avenor-go/avenor/host/run"
)

func spawnJSON(p SpawnParams) json.RawMessage {
	b, _ := json.Marshal(p)
	return b
}

func sampleState() supervisorState {
	return supervisorState{
		Socket: "/tmp/s.sock", PID: 42, RunID: "abc", NextN: 2,
		Runtimes: []hostrun.Record{
			{ID: "rt_2", N: 2, Backend: "echo", Dir: "/w", RunID: "r2", OnEvent: "/l2", Sentinel: "/s2", State: hostrun.RecordParked, LastSeq: 9, SessionID: "ses_2"},
			{ID: "rt_1", N: 1, Label: "one", Backend: "echo", Dir: "/w", RunID: "r1", OnEvent: "/l1", Sentinel: "/s1", State: hostrun.RecordRunning, LastSeq: 3,
				Spawn:   spawnJSON(SpawnParams{Prompt: "hi", Label: "one"}),
				Plugin:  &hostrun.PluginRecord{Network: "unix", Address: "/tmp/plugin-dir1/plugin1", PID: 77, Protocol: "grpc", ProtocolVersion: 1},
				Pending: []hostrun.PermissionRecord{{RequestID: "p1", Delivery: hostrun.DeliveryPending, Request: json.RawMessage(`{"event":"permission.request"}`)}}},
		},
	}
}

func TestStateRoundTrip(t *testing.T) {
	st, err := openStateStore(filepath.Join(t.TempDir(), "state", "stable", "k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.load(); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v, want nothing", ok, err)
	}
	want := sampleState()
	if err := st.save(func() supervisorState { return want }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.load()
	if err != nil || !ok {
		t.Fatalf("load: ok=%v err=%v", ok, err)
	}
	if got.Schema != StateSchema || got.Version != StateVersion {
		t.Fatalf("schema %q version %d", got.Schema, got.Version)
	}
	if len(got.Runtimes) != 2 || got.Runtimes[0].ID != "rt_1" || got.Runtimes[1].ID != "rt_2" {
		t.Fatalf("runtimes not kept in id order: %+v", got.Runtimes)
	}
	r := got.Runtimes[0]
	var spawn SpawnParams
	if err := decodeSpawn(r.Spawn, &spawn); err != nil {
		t.Fatal(err)
	}
	if r.Plugin == nil || *r.Plugin != *want.Runtimes[1].Plugin || spawn.Prompt != "hi" || len(r.Pending) != 1 || r.Pending[0].RequestID != "p1" {
		t.Fatalf("runtime not round-tripped: %+v", r)
	}
	fi, err := os.Stat(st.path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v", fi, err)
	}
	if err := st.remove(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.load(); ok {
		t.Fatal("state still there after remove")
	}
}

// TestStateSaveAtomic: concurrent saves leave one complete file, the last
// snapshot taken, and no temporary file.
func TestStateSaveAtomic(t *testing.T) {
	st, err := openStateStore(filepath.Join(t.TempDir(), "a", "stable", "k"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	last := 0
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = st.save(func() supervisorState {
				mu.Lock()
				last = i
				mu.Unlock()
				s := sampleState()
				s.NextN = i
				return s
			})
		}()
	}
	wg.Wait()
	got, ok, err := st.load()
	if err != nil || !ok {
		t.Fatalf("load after concurrent saves: %v", err)
	}
	if got.NextN != last {
		t.Fatalf("file holds snapshot %d, the last taken was %d", got.NextN, last)
	}
	entries, _ := os.ReadDir(st.dir)
	if len(entries) != 1 {
		t.Fatalf("state dir holds %d entries, want only %s", len(entries), StateFileName)
	}
}

func TestStateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"truncated", `{"schema":"avenor.stable.state","version":1,"runtimes":[{"id":`, "is corrupt"},
		{"not json", "hello", "is corrupt"},
		{"other schema", `{"schema":"something.else","version":1}`, "is not an avenor supervisor state file"},
		{"no version", `{"schema":"avenor.stable.state"}`, "is not an avenor supervisor state file"},
		{"other version", `{"schema":"avenor.stable.state","version":2}`, "has state version 2 and this avenor reads version 1"},
		{"unknown field", `{"schema":"avenor.stable.state","version":1,"extra":true}`, "is corrupt"},
		{"bad runtime id", `{"schema":"avenor.stable.state","version":1,"runtimes":[{"id":"rt_9","n":1,"on_event":"/l","sentinel_file":"/s"}]}`, "is corrupt"},
		{"duplicate runtime", `{"schema":"avenor.stable.state","version":1,"runtimes":[{"id":"rt_1","n":1,"on_event":"/l","sentinel_file":"/s"},{"id":"rt_1","n":1,"on_event":"/l","sentinel_file":"/s"}]}`, "is corrupt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := openStateStore(filepath.Join(t.TempDir(), "s", "stable", "k"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(st.path(), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, ok, err := st.load()
			if ok || !errors.Is(err, ErrState) {
				t.Fatalf("ok=%v err=%v, want a refusal", ok, err)
			}
			for _, want := range []string{st.path(), tc.want, "move it away"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestStateDirFor(t *testing.T) {
	a := StateDirFor("/st", "/tmp/x.sock")
	if a != StateDirFor("/st", "/tmp/../tmp/x.sock") {
		t.Fatal("the same socket gets two state directories")
	}
	if a == StateDirFor("/st", "/tmp/y.sock") {
		t.Fatal("two sockets share a state directory")
	}
	if !strings.HasPrefix(a, "/st/stable/") {
		t.Fatalf("state dir %s is not under <state>/stable", a)
	}
}

func TestEncodeStateIsMarshal(t *testing.T) {
	tricky := sampleState()
	tricky.Runtimes[0].Label = `"spawn":null, "spawn":{}`
	tricky.Runtimes[0].Dir = `/w/"spawn":null`
	many := sampleState()
	for i := range 50 {
		r := many.Runtimes[i%2]
		r.N = i + 3
		r.Spawn = spawnJSON(SpawnParams{Prompt: strings.Repeat("word ", i), Label: `l"` + string(rune('a'+i%26))})
		many.Runtimes = append(many.Runtimes, r)
	}
	for name, s := range map[string]supervisorState{
		"sample":                   sampleState(),
		"no runtimes":              {Socket: "/s", PID: 1, RunID: "r"},
		"spawn null in strings":    tricky,
		"many, long prompts":       many,
		"a spawn read from a file": {Runtimes: []hostrun.Record{{ID: "rt_1", Spawn: json.RawMessage("{\n  \"prompt\": \"hi\"\n}")}}},
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeState(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// json.Marshal compacts a RawMessage; encodeState keeps a file's as
		// it was read: compare what both decode to there.
		if name == "a spawn read from a file" {
			var a, b any
			if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("%s:\n got %s\nwant %s", name, got, want)
			}
			continue
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// BenchmarkEncodeState: state.json of 200 runtimes, each spawned with a
// 5 KB prompt, by encodeState and by json.Marshal.
func BenchmarkEncodeState(b *testing.B) {
	s := sampleState()
	s.Runtimes = nil
	for i := range 200 {
		r := sampleState().Runtimes[1]
		r.N = i + 1
		r.Spawn = spawnJSON(SpawnParams{Prompt: strings.Repeat("word ", 1000), Label: "b" + string(rune('a'+i%26))})
		s.Runtimes = append(s.Runtimes, r)
	}
	for name, encode := range map[string]func(supervisorState) ([]byte, error){
		"encodeState":  encodeState,
		"json.Marshal": func(s supervisorState) ([]byte, error) { return json.Marshal(s) },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
