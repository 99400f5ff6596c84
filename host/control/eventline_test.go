package control

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/avenor-go/avenor/host/event"
)

// A forwarder splices a notification around the writer's line
// (appendEventLine); it must be the notification AppendEvent encodes for
// the event, for host events (Write) and plugin events (WriteFields).
func TestAppendEventLineMatchesAppendEvent(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r<1>", RuntimeID: "rt_1"}, event.Options{})
	sub := w.Subscribe(0)
	defer sub.Close()
	if _, err := w.Write(event.Event{"event": "avenor.turn.start", "n": 1.5, "s": "a&b"}); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{`{"content":{"text":"x \u003c y","type":"text"},"session_id":"s"}`, `{"a":{"b":[1,null]}}`, ``} {
		f, ok := event.ScanFields("agent.message_chunk", []byte(data))
		if !ok {
			t.Fatalf("%s: not canonical", data)
		}
		if _, err := w.WriteFields(f, ""); err != nil {
			t.Fatal(err)
		}
		f.Release()
	}
	w.Close()
	items, _ := sub.ReceiveItems(nil)
	if len(items) != 4 {
		t.Fatalf("%d items", len(items))
	}
	for _, it := range items {
		want, err := AppendEvent(nil, it.Event())
		if err != nil {
			t.Fatal(err)
		}
		got := appendEventLine(nil, it.Line())
		if !bytes.Equal(got, want) {
			t.Fatalf("\n got: %s\nwant: %s", got, want)
		}
		if !json.Valid(bytes.TrimSpace(got)) {
			t.Fatalf("invalid: %s", got)
		}
	}
}
