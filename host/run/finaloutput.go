package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
)

// A runtime's final output in memory. A parked runtime used to keep its
// last session.end whole: 60 runtimes answering 1 MB each held a gigabyte
// long after they were reaped. The log keeps the whole text; the
// supervisor keeps only what status and list show (docs/control-protocol.md#list: at most
// event.FinalOutputLimit runes), and result, which must be lossless
// (docs/control-protocol.md#methods), reads the rest back from the log.

// MaxKeptFinalOutput bounds, in runes, the final_output a runtime keeps in
// memory with its last session.end and in its history: what status and
// list show (event.FinalOutputLimit). A longer one is read back from the
// event log by result.
const MaxKeptFinalOutput = 4096

// boundedEnd returns the session.end to keep: ev itself when its
// final_output is within MaxKeptFinalOutput, else a copy whose final_output
// is a fresh copy of its first MaxKeptFinalOutput runes (a substring would
// keep the whole text alive), and true.
func boundedEnd(ev event.Event) (event.Event, bool) {
	f, ok := ev["final_output"].(string)
	if !ok {
		return ev, false
	}
	cut, truncated := event.TruncateRunes(f, MaxKeptFinalOutput)
	if !truncated {
		return ev, false
	}
	out := make(event.Event, len(ev))
	for k, v := range ev {
		out[k] = v
	}
	out["final_output"] = strings.Clone(cut)
	return out, true
}

// maxResultScan bounds how far back from the end of a runtime's log result
// looks for the session.end whose final output it reads back.
const maxResultScan = maxLogTail

// errNotLogged: the log does not hold the session.end looked for (within
// maxResultScan of its end).
var errNotLogged = errors.New("the session.end is not in the event log")

// loggedFinalOutput reads the final_output of the session.end with seq
// from the end of the log at path, scanning lines backwards.
func loggedFinalOutput(path string, seq int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	pos := st.Size()
	var tail []byte // the log's bytes from pos, not yet looked at
	marker := []byte(`"event":"session.end"`)
	for {
		tail = bytes.TrimRight(tail, "\n")
		i := bytes.LastIndexByte(tail, '\n')
		if i < 0 && pos > 0 {
			if st.Size()-pos >= maxResultScan {
				return "", errNotLogged
			}
			// Read more, as much again as held: a long line takes a few
			// reads, not one per 64 KiB.
			n := min(pos, max(64<<10, int64(len(tail))))
			pos -= n
			buf := make([]byte, int(n)+len(tail))
			if _, err := f.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
				return "", err
			}
			copy(buf[n:], tail)
			tail = buf
			continue
		}
		line := tail[i+1:]
		if bytes.Contains(line, marker) {
			var end struct {
				Seq         int64   `json:"seq"`
				Event       string  `json:"event"`
				FinalOutput *string `json:"final_output"`
			}
			if json.Unmarshal(line, &end) == nil && end.Event == string(event.TypeSessionEnd) {
				switch {
				case end.Seq == seq && end.FinalOutput != nil:
					return *end.FinalOutput, nil
				case end.Seq == seq:
					return "", nil
				case end.Seq < seq:
					return "", errNotLogged
				}
			}
		}
		if i < 0 {
			return "", errNotLogged
		}
		tail = tail[:i]
	}
}

// FinalOutput is the runtime's last final_output, complete: the kept one,
// or, when it was cut, the event log's. A log that no longer has it
// (removed, rewritten) answers the kept part, and truncated.
func (rt *Runtime) FinalOutput() (final string, truncated bool) {
	rt.mu.Lock()
	end, cut := rt.lastEnd, rt.lastEndCut
	rt.mu.Unlock()
	if end == nil {
		return "", false
	}
	f, _ := end["final_output"].(string)
	if !cut {
		return f, false
	}
	seq, _ := control.SeqOf(end)
	whole, err := loggedFinalOutput(rt.spec.EventLog, seq)
	if err != nil {
		rt.log.Warn("reading a runtime's final output back from its event log", "path", rt.spec.EventLog, "error", err)
		return f, true
	}
	return whole, false
}

// LastEnd is the runtime's last session.end, its final_output cut to
// MaxKeptFinalOutput runes when cut; nil when none.
func (rt *Runtime) LastEnd() (end event.Event, cut bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.lastEnd, rt.lastEndCut
}
