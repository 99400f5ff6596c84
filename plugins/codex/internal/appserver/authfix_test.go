package appserver

import (
	"strings"
	"testing"
)

// TestWithAuthFix: a failure for want of credentials carries the fix; any
// other failure is left as codex said it.
func TestWithAuthFix(t *testing.T) {
	for _, tc := range []struct {
		name, info, msg string
		fix             bool
	}{
		{"unauthorized info", "unauthorized", "stream disconnected", true},
		{"http 401", "", "unexpected status 401 Unauthorized: Missing bearer authentication", true},
		{"missing key", "", "OpenAI API key is not set", true},
		{"other failure", "serverOverloaded", "the server is overloaded", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := withAuthFix(tc.info, tc.msg)
			if !strings.HasPrefix(got, tc.msg) {
				t.Errorf("withAuthFix lost codex's message: %q", got)
			}
			if has := strings.Contains(got, "OPENAI_API_KEY") && strings.Contains(got, "codex login"); has != tc.fix {
				t.Errorf("withAuthFix(%q, %q) = %q; fix given: %v, want %v", tc.info, tc.msg, got, has, tc.fix)
			}
		})
	}
}
