package claudecode

import (
	"context"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/turn"
)

// TestNotLoggedInNamesTheFix: Claude Code's "Not logged in" result ends
// the turn with an error that says how to authenticate; other failures
// carry no such advice.
func TestNotLoggedInNamesTheFix(t *testing.T) {
	s := &streamSession{cfg: streamConfig{Backend: StreamName}}
	for _, tc := range []struct {
		result string
		fix    bool
	}{
		{"Not logged in · Please run /login", true},
		{"Invalid API key · Fix external API key", true},
		{"Prompt is too long", false},
	} {
		result := tc.result
		rt, err := turn.New(turn.Config{Backend: StreamName}).Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.turnResult(&streamTurn{rt: rt}, resultFrame{Subtype: "success", IsError: true, Result: &result})
		if err == nil {
			t.Fatalf("%q: want an error", tc.result)
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.result) {
			t.Errorf("the error lost claude's words: %q", msg)
		}
		if has := strings.Contains(msg, "ANTHROPIC_API_KEY in [backends."+StreamName+"].env") && strings.Contains(msg, "/login"); has != tc.fix {
			t.Errorf("%q: error %q; fix given %v, want %v", tc.result, msg, has, tc.fix)
		}
	}
}
