package fromproto

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestPluginMessagesRoundTrip: every message toproto builds for a plugin
// to send is read back by its Kind, with what went in.
func TestPluginMessagesRoundTrip(t *testing.T) {
	proc := runtime.ProcessInfo{PID: 7, PGID: 7, Binary: "agent", Version: "1.0"}
	ask, err := toproto.Ask(runtime.PermissionRequest{ID: "p1", Tool: "bash", Fields: map[string]any{"cmd": "ls"}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := toproto.Event(runtime.Event{Type: runtime.EventMessageChunk, Fields: map[string]any{"delta": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		msg   toproto.Message
		kind  Kind
		check func(t *testing.T, m Message)
	}{
		{"opened", toproto.Opened("s1", proc, []byte(`{"a":1}`), nil), KindOpened, func(t *testing.T, m Message) {
			want := Opening{SessionID: "s1", Process: proc, StartFields: []byte(`{"a":1}`)}
			if got := m.Opened(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		}},
		{"opened with model endpoints", toproto.Opened("s1", proc, nil, []runtime.NetDest{{Host: "127.0.0.1", Port: 4000}, {Host: "::1", Port: 443}}), KindOpened, func(t *testing.T, m Message) {
			want := Opening{SessionID: "s1", Process: proc, ModelEndpoints: []string{"127.0.0.1:4000", "[::1]:443"}}
			if got := m.Opened(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		}},
		{"reattached", toproto.Reattached(toproto.Reattach{SessionID: "s1", Process: proc, TurnID: "t1", TurnRunning: true,
			BufferedEvents: 3, ReplayEvents: 2, Gap: 1500 * time.Millisecond}), KindOpened, func(t *testing.T, m Message) {
			want := Opening{SessionID: "s1", Process: proc, Reattached: true, TurnID: "t1", TurnRunning: true,
				BufferedEvents: 3, ReplayEvents: 2, GapMs: 1500}
			if got := m.Opened(); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v, want %+v", got, want)
			}
		}},
		{"events", toproto.Events([]toproto.EncodedEvent{ev}), KindEvents, func(t *testing.T, m Message) {
			var d ObjectDecoder
			got := m.Events(&d, func(err error) { t.Fatal(err) })
			if len(got) != 1 || got[0].Type != runtime.EventMessageChunk || got[0].Fields["delta"] != "hi" {
				t.Fatalf("got %+v", got)
			}
		}},
		{"permission request", ask, KindPermissionRequest, func(t *testing.T, m Message) {
			got, err := m.PermissionRequest()
			if err != nil || got.ID != "p1" || got.Tool != "bash" || got.Fields["cmd"] != "ls" {
				t.Fatalf("got %+v, %v", got, err)
			}
		}},
		{"turn ended", toproto.Ended("t1", runtime.TurnResult{StopReason: runtime.StopEndTurn}, nil), KindTurnEnded, func(t *testing.T, m Message) {
			got := m.TurnEnded()
			if got.TurnID != "t1" || got.Result.StopReason != runtime.StopEndTurn || got.Err != nil {
				t.Fatalf("got %+v", got)
			}
		}},
		{"process", toproto.ProcessChanged(proc), KindProcess, func(t *testing.T, m Message) {
			if got := m.Process(); got != proc {
				t.Fatalf("got %+v", got)
			}
		}},
		{"closed cleanly", toproto.Closed(nil), KindClosed, func(t *testing.T, m Message) {
			if err := m.Closed(); err != nil {
				t.Fatal(err)
			}
		}},
		{"closed by an error", toproto.Closed(runtime.Errorf(runtime.FaultUser, "no such backend")), KindClosed, func(t *testing.T, m Message) {
			var re *runtime.Error
			if err := m.Closed(); !errors.As(err, &re) || re.Fault != runtime.FaultUser || re.Message != "no such backend" {
				t.Fatalf("got %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(tt.msg.Proto())
			if err != nil {
				t.Fatal(err)
			}
			m, err := ReadMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			if m.Kind() != tt.kind {
				t.Fatalf("kind %v, want %v", m.Kind(), tt.kind)
			}
			tt.check(t, m)
		})
	}
}

// TestHostMessagesRoundTrip: every message toproto builds for a host to
// send is read back by its HostKind.
func TestHostMessagesRoundTrip(t *testing.T) {
	open, err := toproto.Open(runtime.OpenRequest{Backend: "echo", Dir: "/w", Options: map[string]any{"x": true}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		msg   proto.Message
		kind  HostKind
		check func(t *testing.T, m HostMessage)
	}{
		{"open", toproto.OpenSession(open), HostOpen, func(t *testing.T, m HostMessage) {
			req, err := m.Open()
			if err != nil || m.OpenBackend() != "echo" || req.Backend != "echo" || req.Dir != "/w" || req.Options["x"] != true {
				t.Fatalf("got %+v, %v", req, err)
			}
		}},
		{"reattach", toproto.ReattachSession("s1"), HostReattach, func(t *testing.T, m HostMessage) {
			if m.ReattachSessionID() != "s1" {
				t.Fatal(m.ReattachSessionID())
			}
		}},
		{"prompt", toproto.Prompt(runtime.Turn{ID: "t1", Text: "hello"}), HostPrompt, func(t *testing.T, m HostMessage) {
			if got := m.Prompt(); got.ID != "t1" || got.Text != "hello" || got.Compact {
				t.Fatalf("got %+v", got)
			}
		}},
		{"compact", toproto.Prompt(runtime.Turn{ID: "t2", Compact: true}), HostPrompt, func(t *testing.T, m HostMessage) {
			if got := m.Prompt(); got.ID != "t2" || got.Text != "" || !got.Compact {
				t.Fatalf("got %+v", got)
			}
		}},
		{"cancel", toproto.Cancel("t1"), HostCancel, func(t *testing.T, m HostMessage) {
			if m.CancelTurnID() != "t1" {
				t.Fatal(m.CancelTurnID())
			}
		}},
		{"decision", toproto.Decide("p1", runtime.PermissionDecision{Outcome: runtime.OutcomeCancelled}), HostPermissionDecision, func(t *testing.T, m HostMessage) {
			if id, d := m.Decision(); id != "p1" || d.Outcome != runtime.OutcomeCancelled {
				t.Fatalf("got %q %+v", id, d)
			}
		}},
		{"close", toproto.Close(), HostClose, func(t *testing.T, m HostMessage) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			hm := HostMessage{new(pb.HostMessage)}
			if err := proto.Unmarshal(b, hm.m); err != nil {
				t.Fatal(err)
			}
			if hm.Kind() != tt.kind {
				t.Fatalf("kind %v, want %v", hm.Kind(), tt.kind)
			}
			tt.check(t, hm)
		})
	}
}
