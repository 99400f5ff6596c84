package loop

import (
	"strings"
	"testing"
)

// TestVerifyRequestCheck: avenor verify refuses nothing to check and a
// roster entry without its roster, before reading any file.
func TestVerifyRequestCheck(t *testing.T) {
	for _, tc := range []struct {
		r    VerifyRequest
		want string
	}{
		{VerifyRequest{}, "at least one of --loop-file, --team-file, or --roster-file is required"},
		{VerifyRequest{RosterEntry: "a"}, "--roster-entry requires --roster-file"},
		{VerifyRequest{LoopFile: "l.toml", RosterEntry: "a"}, "--roster-entry requires --roster-file"},
		{VerifyRequest{LoopFile: "l.toml"}, ""},
		{VerifyRequest{RosterFile: "r.toml", RosterEntry: "a"}, ""},
	} {
		err := tc.r.Check()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%+v) = %v, want %q", tc.r, err, tc.want)
		}
	}
}
