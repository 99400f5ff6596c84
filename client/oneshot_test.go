package client

import (
	"strings"
	"testing"
	"time"
)

// TestParseWait: a wait's --timeout is seconds or a Go duration, at most
// the bound; "" is the bound and sends nothing.
func TestParseWait(t *testing.T) {
	const max = 10 * time.Minute
	for _, tc := range []struct {
		in        string
		param     any
		wait      time.Duration
		errSubstr string
	}{
		{"", nil, max, ""},
		{"60", 60.0, time.Minute, ""},
		{"0.5", 0.5, 500 * time.Millisecond, ""},
		{"0", 0.0, 0, ""},
		{"1m", "1m", time.Minute, ""},
		{"10m", "10m", max, ""},
		{"600", 600.0, max, ""},
		{"601", nil, 0, "--timeout 601: at most 10m0s"},
		{"10m1s", nil, 0, "--timeout 10m1s: at most 10m0s"},
		{"-1", nil, 0, `--timeout "-1": want seconds (60) or a Go duration (1m)`},
		{"-1s", nil, 0, `--timeout "-1s": want seconds`},
		{"soon", nil, 0, `--timeout "soon": want seconds`},
	} {
		param, wait, err := ParseWait(tc.in, max)
		if tc.errSubstr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
				t.Errorf("ParseWait(%q) error = %v, want %q", tc.in, err, tc.errSubstr)
			}
			continue
		}
		if err != nil || param != tc.param || wait != tc.wait {
			t.Errorf("ParseWait(%q) = %v, %v, %v; want %v, %v", tc.in, param, wait, err, tc.param, tc.wait)
		}
	}
}
