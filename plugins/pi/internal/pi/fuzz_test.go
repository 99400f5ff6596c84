package pi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/turn"
)

// fuzzAnswerWait bounds the wait for the answers to one input's dialogs
// (the host decides at once; this only absorbs a loaded machine).
const fuzzAnswerWait = 5 * time.Second

// FuzzFrames feeds a sequence of pi RPC frames (one JSON object a line, as
// pi writes them on stdout) to a session with a turn in flight, routed as
// session.read routes them (responses to their caller, the rest to
// handle). The session's "pi" is `cat`, so what the plugin writes back comes
// out on its stdout and can be checked. Beyond not panicking: every event
// has a type and crosses the plugin wire; a frame of an unknown type is
// counted once and passed on as one avenor.native; every dialog
// (extension_ui_request select/confirm/input/editor) is asked of the host
// once and answered exactly once, with its id.
func FuzzFrames(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.txt"))
	for _, p := range paths {
		f.Add(piLines(f, p))
	}
	f.Add([]byte(`{"type":"extension_ui_request","id":"d","method":"select","options":[]}` + "\n" +
		`{"type":"extension_ui_request","id":"d","method":"input"}` + "\n" +
		`{"type":"extension_ui_request","id":"e","method":"select","options":7}` + "\n" +
		`{"type":"message_end","message":{"role":"assistant","content":"text","usage":{"input":-1}}}`))
	proc, err := agentproc.Start(context.Background(), agentproc.Spec{Path: "cat", Logger: hclog.NewNullLogger()})
	if err != nil {
		f.Skipf("cat is needed as the fake pi: %v", err)
	}
	f.Cleanup(func() { _ = proc.Stop(time.Second) })
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &fuzzHost{}
		s := &session{host: h, log: hclog.NewNullLogger(), proc: proc, id: "ses", pending: map[string]chan frame{}, dialogs: map[string]*dialog{},
			Runner: turn.New(turn.Config{Backend: Name})}
		rt, err := s.Runner.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Runner.End(rt)
		s.turn = &turnState{rt: rt, done: make(chan struct{}), tools: map[string]toolCall{}}
		dialogs := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			var fr frame
			if len(line) == 0 || json.Unmarshal(line, &fr) != nil || fr.Type == "response" {
				continue // read() counts these itself, or hands them to a caller
			}
			fr.raw = line
			unknownBefore, evBefore := s.unknown.Load(), h.len()
			s.handle(fr)
			grew := s.unknown.Load() - unknownBefore
			if grew > 1 || (grew == 1 && (h.len() != evBefore+1 || h.at(evBefore).Type != runtime.EventNative)) {
				t.Fatalf("%s: %d more unknown frames, events %v", fr.Type, grew, h.types(evBefore))
			}
			var ev piEvent
			if json.Unmarshal(line, &ev) == nil && ev.Type == "extension_ui_request" {
				switch ev.Method {
				case "select", "confirm", "input", "editor":
					dialogs++
					// One at a time: a second dialog with the same id
					// would otherwise share its entry in s.dialogs.
					checkAnswer(t, proc, ev.ID)
				}
			}
		}
		if n := h.asked(); n != dialogs {
			t.Fatalf("%d dialogs, %d permission requests", dialogs, n)
		}
		for _, ev := range h.all() {
			if ev.Type == "" {
				t.Fatalf("an event without a type: %v", ev)
			}
			if _, err := json.Marshal(ev.Fields); err != nil {
				t.Fatalf("event %s does not cross the plugin wire: %v", ev.Type, err)
			}
		}
	})
}

// checkAnswer waits for the one extension_ui_response the plugin writes
// for dialog id.
func checkAnswer(t *testing.T, proc *agentproc.Process, id string) {
	t.Helper()
	select {
	case l := <-proc.Lines():
		var resp map[string]any
		if err := json.Unmarshal(l.Data, &resp); err != nil || l.Err != nil {
			t.Fatalf("the plugin wrote %q (%v)", l.Data, l.Err)
		}
		if resp["type"] != "extension_ui_response" || resp["id"] != id {
			t.Fatalf("answer %v, want an extension_ui_response for %q", resp, id)
		}
		n := 0
		for _, k := range []string{"cancelled", "value", "confirmed"} {
			if _, ok := resp[k]; ok {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("answer %v: want exactly one of cancelled, value, confirmed", resp)
		}
	case <-time.After(fuzzAnswerWait):
		t.Fatalf("dialog %q was not answered within %v", id, fuzzAnswerWait)
	}
}

// fuzzHost records events and picks the first offered option at once. It
// is called from the reader and from the permission goroutines.
type fuzzHost struct {
	mu     sync.Mutex
	events []runtime.Event
	perms  int
}

func (h *fuzzHost) Emit(ev runtime.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *fuzzHost) AskPermission(_ context.Context, req runtime.PermissionRequest) (runtime.PermissionDecision, error) {
	h.mu.Lock()
	h.perms++
	h.mu.Unlock()
	if len(req.Options) == 0 {
		return runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}, nil
	}
	o := req.Options[0]
	return runtime.PermissionDecision{Outcome: runtime.OutcomeSelected, OptionID: o.ID, Kind: runtime.DecisionKind(o.Kind)}, nil
}

func (h *fuzzHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

func (h *fuzzHost) len() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.events) }

func (h *fuzzHost) at(i int) runtime.Event { h.mu.Lock(); defer h.mu.Unlock(); return h.events[i] }

func (h *fuzzHost) asked() int { h.mu.Lock(); defer h.mu.Unlock(); return h.perms }

func (h *fuzzHost) all() []runtime.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.Event(nil), h.events...)
}

func (h *fuzzHost) types(from int) []runtime.EventType {
	var out []runtime.EventType
	for _, ev := range h.all()[from:] {
		out = append(out, ev.Type)
	}
	return out
}

// piLines is what pi wrote in a recorded transcript ("<- " lines).
func piLines(f *testing.F, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		// "<- {json}" or "[k=v] <- {json}" (fakepi_test.go)
		if _, rest, ok := strings.Cut(l, "<- "); ok && !strings.HasPrefix(l, "#") {
			out = append(out, rest)
		}
	}
	return []byte(strings.Join(out, "\n"))
}
