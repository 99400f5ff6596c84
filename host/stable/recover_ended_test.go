package stable

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// TestRecoverTurnEnded: a supervisor that died after a turn's session.end
// reached the log leaves a runtime the next one brings back parked, with
// that turn's sentinel — written from the session.end when the dead one
// never got to it — and no second session.end. One whose log stops
// mid-turn, with no plugin to take over, still ends in error.
func TestRecoverTurnEnded(t *testing.T) {
	const sessionEnd = `{"event":"session.end","final_output":"hi\n","run_id":"r","runtime_id":"rt_1","seq":4,"session_id":"s1","stop_reason":"end_turn","ts":1}`
	turn := `{"event":"session.start","run_id":"r","runtime_id":"rt_1","seq":1,"ts":1}
{"event":"avenor.turn.start","run_id":"r","runtime_id":"rt_1","seq":2,"ts":1}
{"content":{"text":"hi","type":"text"},"event":"agent.message_chunk","run_id":"r","runtime_id":"rt_1","seq":3,"session_id":"s","ts":1}
`
	for _, tc := range []struct {
		name, log, sentinel, state string
		wantStatus                 string
		wantSentinel               string // its first two lines
		wantEnds                   int
		acceptedAt                 int64 // a follow-up accepted when the log ended here
	}{
		{"ended before its sentinel", turn + sessionEnd + "\n", "", persistRunning, "idle", "DONE\nSESSION=s1", 1, 0},
		{"ended, parked not yet saved", turn + sessionEnd + "\n", "DONE\nSESSION=s1\nSTOP_REASON=end_turn\nEXIT_CODE=0\nRUN=r\n", persistRunning, "idle", "DONE\nSESSION=s1", 1, 0},
		{"ended, saved parked", turn + sessionEnd + "\n", "", persistParked, "idle", "DONE\nSESSION=s1", 1, 0},
		{"mid-turn, no plugin", turn, "", persistRunning, "ended", "FAILED\nSESSION=s", 1, 0},
		// A follow-up accepted when the log ended at 4 wrote nothing: the
		// prompt did not run, and its harness is told so (a turn ended in
		// error: the runtime is ended, docs/stable.md#runtimes); one accepted at 3
		// wrote its turn, which ended.
		{"follow-up accepted, never started", turn + sessionEnd + "\n", "", persistRunning, "ended", "FAILED\nSESSION=s\nSTOP_REASON=error", 2, 4},
		{"follow-up started, nothing durable past its first line", turn + sessionEnd + "\n", "", persistRunning, "idle", "DONE\nSESSION=s1", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "avr")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			sock := filepath.Join(dir, "s.sock")
			logPath, sentPath := filepath.Join(dir, "events.ndjson"), filepath.Join(dir, "s.done")
			if err := os.WriteFile(logPath, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.sentinel != "" {
				if err := os.WriteFile(sentPath, []byte(tc.sentinel), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			stateDir := StateDirFor(filepath.Join(dir, "state"), sock)
			st, err := openStateStore(stateDir)
			if err != nil {
				t.Fatal(err)
			}
			prev := supervisorState{Socket: sock, PID: 1 << 30, RunID: "dead", NextN: 1, Runtimes: []runtimeState{{
				ID: "rt_1", N: 1, Backend: "scripted", Dir: dir, RunID: "r", OnEvent: logPath, Sentinel: sentPath,
				SessionID: "s", State: tc.state, LastSeq: 4, Spawn: SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say hi"},
				AcceptedAt: tc.acceptedAt,
			}}}
			if err := st.save(func() supervisorState { return prev }); err != nil {
				t.Fatal(err)
			}
			var launches atomic.Int32
			_, c, served := serveInProcess(t, Config{SocketPath: sock, TempDir: dir, Home: dir, StateDir: stateDir, Resolve: inProcess(&launches)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rt, err := c.Runtime(ctx, "rt_1")
			if err != nil {
				t.Fatal(err)
			}
			if rt.Status != tc.wantStatus || rt.SessionID != "s" {
				t.Errorf("status %q session %q, want %q s: %s", rt.Status, rt.SessionID, tc.wantStatus, rt.Raw)
			}
			sent, err := os.ReadFile(sentPath)
			if err != nil {
				t.Fatalf("no sentinel after recovery: %v", err)
			}
			if !strings.HasPrefix(string(sent), tc.wantSentinel) {
				t.Errorf("sentinel %q, want it to start %q", sent, tc.wantSentinel)
			}
			logged, _ := os.ReadFile(logPath)
			if n := strings.Count(string(logged), `"event":"session.end"`); n != tc.wantEnds {
				t.Errorf("%d session.end in the log, want %d:\n%s", n, tc.wantEnds, logged)
			}
			if err := c.Shutdown(ctx, ""); err != nil {
				t.Fatal(err)
			}
			<-served
			if launches.Load() != 0 {
				t.Errorf("recovery launched %d plugins, want none", launches.Load())
			}
		})
	}
}

// TestFollowUpAcceptedIsDurable: a follow-up prompt is answered accepted
// only once state.json records it, so that a successor can tell it from
// the turn before.
func TestFollowUpAcceptedIsDurable(t *testing.T) {
	dir, err := os.MkdirTemp("", "avr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	stateDir := StateDirFor(filepath.Join(dir, "state"), sock)
	var launches atomic.Int32
	_, c, served := serveInProcess(t, Config{SocketPath: sock, TempDir: dir, Home: dir, StateDir: stateDir, Resolve: inProcess(&launches)})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sp, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Dir: dir, Prompt: "say hi"})
	if err != nil {
		t.Fatal(err)
	}
	var parked client.Runtime
	for parked.Status != "idle" {
		if parked, err = c.Runtime(ctx, sp.RuntimeID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Prompt(ctx, "chunks 40 every=25ms", sp.RuntimeID); err != nil {
		t.Fatal(err)
	}
	st, err := openStateStore(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	saved, ok, err := st.load()
	if err != nil || !ok || len(saved.Runtimes) != 1 {
		t.Fatalf("state after the prompt: %+v %v %v", saved, ok, err)
	}
	if got := saved.Runtimes[0].AcceptedAt; got != parked.LatestSeq {
		t.Errorf("state.json says the prompt was accepted at seq %d, want %d (the log's end when it was)", got, parked.LatestSeq)
	}
	if err := c.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	<-served
}
