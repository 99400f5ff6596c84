package plugintest

import "testing"

func TestPromptsOr(t *testing.T) {
	prompt := PromptsOr(map[TurnKind]string{TurnPlain: "say hi", TurnLong: ""})
	for _, tc := range []struct {
		kind TurnKind
		want string
	}{
		{TurnPlain, "say hi"},
		{TurnLong, func() string { p, _ := DefaultPrompt("echo", TurnLong); return p }()},
		{TurnPermission, func() string { p, _ := DefaultPrompt("echo", TurnPermission); return p }()},
	} {
		if got, ok := prompt("echo", tc.kind); got != tc.want || !ok {
			t.Errorf("prompt(%v) = %q, %v; want %q", tc.kind, got, ok, tc.want)
		}
	}
}
