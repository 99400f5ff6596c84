package sentinel

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// MaxLogLine is the longest event-log line ReadLastSessionEnd parses (64 MiB).
// A longer line is skipped as malformed rather than read into memory: a
// session.end carrying a huge final_output is the only legitimate line of that
// size, and losing its stop reason costs less than exhausting memory.
const MaxLogLine = 64 << 20

// ReadLastSessionEnd returns the session id and stop reason of the last
// session.end line of an NDJSON event log (docs/run.md#sentinel). Malformed lines,
// lines that are not JSON objects and lines longer than MaxLogLine are
// skipped. The session id is read from session_id, falling back to sessionID
// when session_id is absent, empty or not a string. Both results are empty
// and err is nil when the log holds no session.end; err is non-nil only when
// the log cannot be opened or read (a missing log matches fs.ErrNotExist).
func ReadLastSessionEnd(logPath string) (sessionID string, stopReason sdk.StopReason, err error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", "", fmt.Errorf("read session.end from event log %s: %w", logPath, err)
	}
	defer f.Close()
	sessionID, stopReason, err = readLastSessionEnd(f, MaxLogLine)
	if err != nil {
		return "", "", fmt.Errorf("read session.end from event log %s: %w", logPath, err)
	}
	return sessionID, stopReason, nil
}

// readLastSessionEnd scans r line by line, never holding more than maxLine
// bytes of one line.
func readLastSessionEnd(r io.Reader, maxLine int) (sessionID string, stopReason sdk.StopReason, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	tooLong := false
	for {
		chunk, rerr := br.ReadSlice('\n')
		switch {
		case errors.Is(rerr, bufio.ErrBufferFull):
			// A fragment of a line longer than the reader's buffer.
			if !tooLong {
				if len(line)+len(chunk) > maxLine {
					tooLong, line = true, line[:0]
				} else {
					line = append(line, chunk...)
				}
			}
			continue
		case rerr != nil && !errors.Is(rerr, io.EOF):
			return "", "", rerr
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk = chunk[:n-1]
		}
		if !tooLong && len(line)+len(chunk) <= maxLine {
			line = append(line, chunk...)
			if sid, stop, ok := parseSessionEnd(line); ok {
				sessionID, stopReason = sid, stop
			}
		}
		line, tooLong = line[:0], false
		if rerr != nil { // io.EOF: the last line had no newline
			return sessionID, stopReason, nil
		}
	}
}

// parseSessionEnd reports whether line is a session.end event and, if so,
// its session id and stop reason. Keys are matched exactly: decoding into a
// struct would also accept "SESSION_ID" or "sessionid", which no writer
// produces.
func parseSessionEnd(line []byte) (sessionID string, stopReason sdk.StopReason, ok bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(line, &fields) != nil || fields == nil {
		return "", "", false
	}
	if sdk.EventType(stringField(fields, "event")) != sdk.EventSessionEnd {
		return "", "", false
	}
	sessionID = stringField(fields, "session_id")
	if sessionID == "" {
		sessionID = stringField(fields, "sessionID")
	}
	return sessionID, sdk.StopReason(stringField(fields, "stop_reason")), true
}

// stringField returns the string value of key, or "" when it is absent or
// not a string.
func stringField(fields map[string]json.RawMessage, key string) string {
	raw, ok := fields[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
