package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of what the tools return to an agent, which reads every byte.
const (
	// DefaultEventsLimit is avenor_events' limit when none is given (the
	// original's); MaxEventsLimit the largest honoured.
	DefaultEventsLimit = 50
	MaxEventsLimit     = 500
	// MaxEventString bounds each string of an event avenor_events returns
	// (a long message chunk, a tool output); the log keeps it whole.
	MaxEventString = 2000
	// MaxResultOutput bounds avenor_result's output in bytes; a longer one
	// is cut (output_truncated) and output_event_path names the log that
	// holds it whole.
	MaxResultOutput = 64 << 10
	// MaxLogLine is the longest event log line read; a longer one is
	// skipped.
	MaxLogLine = 16 << 20
)

// logEvents reads the run's NDJSON event log: the events of the given
// types (all when none), after afterSeq (oldest first, at most limit) or,
// with afterSeq 0, the latest limit. latest is the greatest seq in the log;
// cut reports that a string was shortened.
func logEvents(path string, types []string, afterSeq int64, limit int) (events []map[string]any, latest int64, cut bool, err error) {
	want := map[sdk.EventType]bool{}
	for _, t := range types {
		want[sdk.EventType(t)] = true
	}
	err = scanLog(path, func(ev map[string]any) bool {
		seq := seqOf(ev)
		latest = max(latest, seq)
		if len(want) > 0 && !want[nameOf(ev)] {
			return true
		}
		if afterSeq > 0 {
			if seq <= afterSeq || len(events) >= limit {
				return true
			}
			events = append(events, ev)
			return true
		}
		events = append(events, ev)
		if len(events) > limit {
			events = events[1:]
		}
		return true
	})
	for _, ev := range events {
		if shorten(ev) {
			cut = true
		}
	}
	if events == nil {
		events = []map[string]any{}
	}
	return events, latest, cut, err
}

// lastFinalOutput is the final_output of the log's last session.end, whole.
func lastFinalOutput(path string) (string, bool) {
	var out string
	found := false
	_ = scanLog(path, func(ev map[string]any) bool {
		if nameOf(ev) == sdk.EventSessionEnd {
			if f, ok := ev["final_output"].(string); ok {
				out, found = f, true
			}
		}
		return true
	})
	return out, found
}

// scanLog calls fn with each event of the log, skipping malformed and
// overlong lines, until fn returns false.
func scanLog(path string, fn func(map[string]any) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= MaxLogLine {
			line = append(line, chunk...)
		} else {
			line = append(line[:0], 0) // poisoned: skipped at its end
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && line[0] != 0 {
			var ev map[string]any
			if json.Unmarshal(line, &ev) == nil && ev != nil && !fn(ev) {
				return nil
			}
		}
		line = line[:0]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func nameOf(ev map[string]any) sdk.EventType {
	n, _ := ev["event"].(string)
	return sdk.EventType(n)
}

func seqOf(ev map[string]any) int64 {
	f, _ := ev["seq"].(float64)
	return int64(f)
}

// shorten cuts every string longer than MaxEventString, in place.
func shorten(v any) bool {
	cut := false
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok {
				if c, ok := cutString(s, MaxEventString); ok {
					t[k], cut = c, true
				}
				continue
			}
			cut = shorten(x) || cut
		}
	case []any:
		for i, x := range t {
			if s, ok := x.(string); ok {
				if c, ok := cutString(s, MaxEventString); ok {
					t[i], cut = c, true
				}
				continue
			}
			cut = shorten(x) || cut
		}
	}
	return cut
}

// cutString keeps the first n bytes of s (on a rune boundary) and says how
// much was cut.
func cutString(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…[truncated]", true
}
