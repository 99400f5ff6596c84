package runtime

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// The chunk helpers write exactly what encoding the chunk's map writes,
// so the host takes them without decoding (canonical form).
func TestAppendChunkJSONMatchesMarshal(t *testing.T) {
	for _, tc := range []struct{ sid, text string }{
		{"", "x"}, {"ses_1", "a < b && c > d\n\u2028é\xff"}, {"s\"<", ""},
	} {
		for _, c := range []struct {
			got []byte
			ev  Event
		}{
			{AppendMessageChunkJSON(nil, tc.sid, tc.text), MessageChunk(tc.sid, tc.text)},
			{AppendThoughtChunkJSON(nil, tc.sid, tc.text), ThoughtChunk(tc.sid, tc.text)},
		} {
			want, err := json.Marshal(c.ev.Fields)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.got) != string(want) {
				t.Errorf("%q %q:\n got: %s\nwant: %s", tc.sid, tc.text, c.got, want)
			}
		}
	}
}

type mapHost struct{ got []Event }

func (h *mapHost) Emit(ev Event) { h.got = append(h.got, ev) }
func (h *mapHost) AskPermission(context.Context, PermissionRequest) (PermissionDecision, error) {
	return PermissionDecision{}, nil
}
func (h *mapHost) Logger() hclog.Logger { return hclog.NewNullLogger() }

type jsonHost struct {
	mapHost
	typ  EventType
	data []byte
}

func (h *jsonHost) EmitJSON(typ EventType, data []byte) { h.typ, h.data = typ, data }

// EmitJSON hands the bytes to a JSONEmitter as they are, and decodes them
// for any other Host (or says why it cannot).
func TestEmitJSON(t *testing.T) {
	data := AppendMessageChunkJSON(nil, "s", "hi")
	jh := &jsonHost{}
	if err := EmitJSON(jh, EventMessageChunk, data); err != nil || jh.typ != EventMessageChunk || string(jh.data) != string(data) || len(jh.got) != 0 {
		t.Fatalf("JSONEmitter: %v %q %q %v", err, jh.typ, jh.data, jh.got)
	}
	mh := &mapHost{}
	if err := EmitJSON(mh, EventMessageChunk, data); err != nil {
		t.Fatal(err)
	}
	if want := MessageChunk("s", "hi"); len(mh.got) != 1 || !reflect.DeepEqual(mh.got[0], want) {
		t.Fatalf("Emit got %v, want %v", mh.got, want)
	}
	if err := EmitJSON(mh, EventWarning, nil); err != nil || len(mh.got) != 2 || mh.got[1].Fields == nil {
		t.Fatalf("empty fields: %v %v", err, mh.got)
	}
	if err := EmitJSON(mh, EventWarning, []byte(`[1]`)); err == nil || len(mh.got) != 2 {
		t.Fatalf("not an object: %v %v", err, mh.got)
	}
}
