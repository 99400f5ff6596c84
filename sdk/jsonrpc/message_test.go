package jsonrpc

import (
	"encoding/json"
	"testing"
)

func TestIDs(t *testing.T) {
	same := [][2]string{{`0`, ` 0`}, {`1`, `1.0`}, {`"a"`, `"a"`}, {`1e2`, `100`}}
	for _, p := range same {
		if idKey(json.RawMessage(p[0])) != idKey(json.RawMessage(p[1])) {
			t.Errorf("idKey(%s) != idKey(%s)", p[0], p[1])
		}
	}
	if idKey(json.RawMessage(`"1"`)) == idKey(json.RawMessage(`1`)) {
		t.Error(`the string "1" and the number 1 must differ`)
	}
	if IDString(json.RawMessage(`0`)) != "0" || IDString(json.RawMessage(`"dd3d-uuid"`)) != "dd3d-uuid" {
		t.Error("IDString")
	}
}
