package client

import (
	"bytes"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// The fast path takes only lines shaped exactly as the server writes an
// event notification, and only when the params parse; the rest go through
// the general decoder.
func TestNotificationParams(t *testing.T) {
	tests := []struct {
		name      string
		line      string
		fast      bool // the fast path takes the line
		wantName  sdk.EventType
		wantSeq   int64
		wantParam string
	}{
		{"event", `{"jsonrpc":"2.0","method":"event","params":{"event":"x","seq":3,"runtime_id":"rt_1"}}`, true, "x", 3, `{"event":"x","seq":3,"runtime_id":"rt_1"}`},
		{"lagged without seq", `{"jsonrpc":"2.0","method":"event","params":{"dropped_count":2,"event":"subscriber.lagged"}}`, true, "subscriber.lagged", 0, `{"dropped_count":2,"event":"subscriber.lagged"}`},
		{"more keys after params", `{"jsonrpc":"2.0","method":"event","params":{"event":"x"},"id":1}`, false, "", 0, ""},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`, false, "", 0, ""},
		{"other key order", `{"method":"event","jsonrpc":"2.0","params":{"event":"x"}}`, false, "", 0, ""},
		{"truncated", `{"jsonrpc":"2.0","method":"event","params":{"event":"x"`, false, "", 0, ""},
		{"bad seq type", `{"jsonrpc":"2.0","method":"event","params":{"event":"x","seq":"3"}}`, false, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, ok := notificationParams([]byte(tt.line))
			var ev Event
			if ok {
				var err error
				ev, err = parseEvent(raw)
				ok = err == nil
			}
			if ok != tt.fast {
				t.Fatalf("fast path took it: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			if ev.Name != tt.wantName || ev.Seq != tt.wantSeq || !bytes.Equal(ev.Raw, []byte(tt.wantParam)) {
				t.Fatalf("got %q seq %d raw %s", ev.Name, ev.Seq, ev.Raw)
			}
		})
	}
}
