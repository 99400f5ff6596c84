package watch

import (
	"strings"
	"testing"
	"time"
)

// TestCommandCheck: avenor watch's flags that do not go together are
// refused with the fix; the format is parsed.
func TestCommandCheck(t *testing.T) {
	ok := Command{Format: "plain", PollInterval: time.Second}
	for _, tc := range []struct {
		name string
		c    func(Command) Command
		log  string
		want string
	}{
		{"plain", func(c Command) Command { return c }, "ev.ndjson", ""},
		{"transcript", func(c Command) Command { c.Format = "transcript"; return c }, "ev.ndjson", ""},
		{"bad format", func(c Command) Command { c.Format = "yaml"; return c }, "ev.ndjson", "yaml"},
		{"zero poll", func(c Command) Command { c.PollInterval = 0; return c }, "ev.ndjson", "--poll-interval must be positive"},
		{"sentinel without follow", func(c Command) Command { c.Sentinel = "run.done"; return c }, "ev.ndjson", "add --follow or drop it"},
		{"sentinel with follow", func(c Command) Command { c.Sentinel, c.Follow = "run.done", true; return c }, "ev.ndjson", ""},
		{"cursor on stdin", func(c Command) Command { c.SinceCursor = "c"; return c }, Stdin, "--since-cursor needs a log file"},
		{"cursor on a file", func(c Command) Command { c.SinceCursor = "c"; return c }, "ev.ndjson", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c(ok)
			f, err := c.Check(tc.log)
			if tc.want == "" {
				if err != nil || string(f) != c.Format {
					t.Fatalf("Check = %q, %v; want %q", f, err, c.Format)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want %q", err, tc.want)
			}
		})
	}
}
