package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/sentinel"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// A runtime's event log and sentinel as a supervisor's restart finds them:
// the seq to continue from, the turn the log ends with, the events a
// re-attached plugin sends again that the log already has.

// maxLogTail bounds how far back the last line of an event log is looked
// for.
const maxLogTail = 64 << 20

// LogTail returns the seq of the last complete line of the log at path,
// cutting off a torn last line (one the dead supervisor was writing) so
// that the lines appended after it start on a line of their own.
func LogTail(path string) (seq int64, lastType string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "", fmt.Errorf("its event log %s is gone", path)
	}
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	if !st.Mode().IsRegular() {
		return 0, "", fmt.Errorf("its event log %s is not a regular file", path)
	}
	size := st.Size()
	n := min(size, int64(maxLogTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", err
	}
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		cut := bytes.LastIndexByte(buf, '\n') + 1 // 0: the whole tail is one torn line
		if err := f.Truncate(size - n + int64(cut)); err != nil {
			return 0, "", fmt.Errorf("cutting the torn last line of %s: %w", path, err)
		}
		buf = buf[:cut]
	}
	buf = bytes.TrimRight(buf, "\n")
	if len(buf) == 0 {
		return 0, "", nil
	}
	line := buf[bytes.LastIndexByte(buf, '\n')+1:]
	var head struct {
		Seq   int64  `json:"seq"`
		Event string `json:"event"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return 0, "", fmt.Errorf("the last line of its event log %s does not parse: %v", path, err)
	}
	return head.Seq, head.Event, nil
}

// maxReplayTail bounds how much of an event log's end is compared with the
// events a re-attached plugin sends again.
const maxReplayTail = 4 << 20

// stampedKeys are the envelope fields the host adds: they are not the
// plugin's, and do not take part in comparing its events.
var stampedKeys = []string{"seq", "ts", "run_id", "run_label", "runtime_id", "session_id"}

// logTailEvents returns the plugin's events at the end of the log (host
// events left out, but avenor.error and avenor.warning, which plugins
// emit too), oldest first, each in its canonical form (eventKey).
func logTailEvents(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := min(st.Size(), int64(maxReplayTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if n < st.Size() && len(lines) > 0 {
		lines = lines[1:] // the first may be cut
	}
	var out []string
	for _, line := range lines {
		var ev map[string]any
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		typ, _ := ev["event"].(string)
		if event.IsHostEvent(sdk.EventType(typ)) && typ != string(event.TypeError) && typ != string(event.TypeWarning) {
			continue
		}
		out = append(out, eventKey(ev))
	}
	return out, nil
}

// eventKey is an event's canonical form: its JSON without the envelope,
// keys sorted, numbers as encoding/json writes float64s.
func eventKey(ev map[string]any) string {
	c := make(map[string]any, len(ev))
	for k, v := range ev {
		c[k] = v
	}
	for _, k := range stampedKeys {
		delete(c, k)
	}
	b, _ := json.Marshal(c)
	var round any
	if json.Unmarshal(b, &round) == nil {
		b, _ = json.Marshal(round)
	}
	return string(b)
}

// writtenIn returns how many of the events a re-attached plugin sends
// again (the oldest first) the log already ends with: the largest j whose
// first j replayed events are the log's last j plugin events. A flood of
// identical events can make it take a few lost ones for written; it never
// writes one twice that the log holds.
func writtenIn(tail []string) func([]sdk.Event) int {
	return func(replay []sdk.Event) int {
		keys := make([]string, len(replay))
		for i, ev := range replay {
			m := make(map[string]any, len(ev.Fields)+1)
			for k, v := range ev.Fields {
				m[k] = v
			}
			m["event"] = string(ev.Type)
			keys[i] = eventKey(m)
		}
	next:
		for j := min(len(keys), len(tail)); j > 0; j-- {
			for i := range j {
				if keys[i] != tail[len(tail)-j+i] {
					continue next
				}
			}
			return j
		}
		return 0
	}
}

// lastTurnEvents returns the events of the log's last turn (after its last
// avenor.turn.start), within the log's last maxReplayTail bytes.
func lastTurnEvents(path string) []event.Event {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	n := min(st.Size(), int64(maxReplayTail))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	var out []event.Event
	for _, line := range bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n")) {
		var ev event.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Type() == event.TypeTurnStart {
			out = out[:0]
			continue
		}
		out = append(out, ev)
	}
	return out
}

// ReadSentinel reads a sentinel's exit code and stop reason.
func ReadSentinel(path string) (exit int, stop sdk.StopReason, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	lines := bytes.Split(data, []byte("\n"))
	if string(lines[0]) == sentinel.StatusDone {
		exit, ok = 0, true
	}
	for _, line := range lines[1:] {
		k, v, found := bytes.Cut(line, []byte("="))
		if !found {
			continue
		}
		switch string(k) {
		case "EXIT_CODE":
			_, _ = fmt.Sscan(string(v), &exit)
			ok = true
		case "STOP_REASON":
			stop = sdk.StopReason(v)
		}
	}
	return exit, stop, ok
}
