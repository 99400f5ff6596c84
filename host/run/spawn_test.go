package run

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want time.Duration
		bad  bool
	}{
		{"", 0, false}, {"null", 0, false}, {"600", 10 * time.Minute, false}, {"1.5", 1500 * time.Millisecond, false},
		{`"10m"`, 10 * time.Minute, false}, {`"600"`, 10 * time.Minute, false}, {`"1h30m"`, 90 * time.Minute, false},
		{"-1", 0, true}, {`"-5s"`, 0, true}, {`"soon"`, 0, true}, {"true", 0, true}, {"1e30", 0, true},
	} {
		got, err := ParseTimeout(json.RawMessage(tc.raw))
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseTimeout(%s) = %v, %v; want %v, bad %v", tc.raw, got, err, tc.want, tc.bad)
		}
	}
}
