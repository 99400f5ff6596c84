package runner

import (
	"encoding/json"
	"testing"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestDenialEvents: which plugin events become avenor.sandbox.denied, and
// with what fields; a run without a sandbox decodes and reports nothing.
func TestDenialEvents(t *testing.T) {
	sb := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap, Writable: []string{"/w"}, DenyRead: []string{"/h/.ssh"}}
	for _, tc := range []struct {
		name   string
		typ    sdk.EventType
		fields string
		want   []event.Event
	}{
		{"a shell's refused write", sdk.EventToolCallUpdate,
			`{"toolCallId":"c1","status":"failed","rawOutput":{"output":"touch: cannot touch '/srv/o': Read-only file system\n"}}`,
			[]event.Event{{"event": "avenor.sandbox.denied", "op": "write", "path": "/srv/o", "tool": "c1"}}},
		{"a hidden key read", sdk.EventToolCallUpdate,
			`{"toolCallId":"c2","status":"completed","content":[{"content":{"text":"cat: /h/.ssh/id: No such file or directory"}}]}`,
			[]event.Event{{"event": "avenor.sandbox.denied", "op": "read", "path": "/h/.ssh/id", "tool": "c2"}}},
		{"a failed edit without an errno", sdk.EventToolCallUpdate,
			`{"toolCallId":"c3","status":"failed","kind":"edit","locations":[{"path":"/srv/e"},{"path":"/w/ok"}],"rawOutput":{"error":"Unknown: FileSystem.writeFile (/srv/e)"}}`,
			[]event.Event{{"event": "avenor.sandbox.denied", "op": "write", "path": "/srv/e", "tool": "c3"}}},
		{"the command asked is no output", sdk.EventToolCallUpdate,
			`{"toolCallId":"c4","status":"completed","title":"echo '/srv/x: Read-only file system'","rawInput":{"command":"echo '/srv/x: Read-only file system'"}}`, nil},
		{"a streamed piece is not read", sdk.EventToolCallUpdate,
			`{"toolCallId":"c5","status":"in_progress","delta":"bwrap: "}`, nil},
		{"a plugin's error quoting bwrap", sdk.EventError,
			`{"source":"backend","message":"runtime exited: bwrap: Can't find source path /srv/gone: No such file or directory"}`,
			[]event.Event{{"event": "avenor.sandbox.denied", "op": "launch", "path": "/srv/gone", "message": "bwrap: Can't find source path /srv/gone: No such file or directory"}}},
		{"other events are not read", sdk.EventMessageChunk, `{"content":{"text":"/srv/x: Read-only file system"}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDenials(sb)
			got := d.fromJSON(tc.typ, []byte(tc.fields))
			if a, b := mustJSON(t, got), mustJSON(t, tc.want); a != b {
				t.Errorf("got  %s\nwant %s", a, b)
			}
			if again := d.fromJSON(tc.typ, []byte(tc.fields)); len(again) != 0 {
				t.Errorf("reported twice: %v", again)
			}
			if none := newDenials(sdk.Sandbox{}).fromJSON(tc.typ, []byte(tc.fields)); none != nil {
				t.Errorf("without a sandbox: %v", none)
			}
		})
	}
}

// TestDenialEventsBounded: at most MaxDenialEvents per attempt.
func TestDenialEventsBounded(t *testing.T) {
	d := newDenials(sdk.Sandbox{Profile: sdk.SandboxReadOnly, Mechanism: sdk.MechanismBubblewrap})
	n := 0
	for i := range MaxDenialEvents + 10 {
		out, _ := json.Marshal(map[string]any{"toolCallId": "c" + string(rune('a'+i%26)) + string(rune('a'+i/26)), "status": "failed",
			"rawOutput": "x '/srv/f': Read-only file system"})
		n += len(d.fromJSON(sdk.EventToolCallUpdate, out))
	}
	if n != MaxDenialEvents {
		t.Errorf("%d denial events, want %d", n, MaxDenialEvents)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
