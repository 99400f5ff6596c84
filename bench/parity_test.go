package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"go.uber.org/goleak"
)

// The same echo scenario gives the same events in process and out of
// process, apart from the fields that differ by nature (ts, session ids,
// the working directory).
func TestInProcessMatchesOutOfProcess(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var logs [][]map[string]any
	for _, m := range modes {
		var buf bytes.Buffer
		run(t, m, "echo", "please say hello", t.TempDir(), &buf)
		var evs []map[string]any
		for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			var ev map[string]any
			if err := json.Unmarshal(line, &ev); err != nil {
				t.Fatalf("%s: bad line %q: %v", m.name, line, err)
			}
			for _, k := range []string{"ts", "session_id", "dir", "plugin_version"} {
				delete(ev, k)
			}
			evs = append(evs, ev)
		}
		logs = append(logs, evs)
	}
	if len(logs[0]) < 5 {
		t.Fatalf("suspiciously short log: %v", logs[0])
	}
	if !reflect.DeepEqual(logs[0], logs[1]) {
		t.Fatalf("events differ:\nout-of-process: %v\nin-process:     %v", logs[0], logs[1])
	}
}
