package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCommandRefusals: `avenor mcp` flags that do not go together are
// refused before anything is served, each naming the flag.
func TestCommandRefusals(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		name string
		c    Command
		want string
	}{
		{"transport", Command{Transport: "grpc"}, `--transport "grpc": only "stdio" or "http"`},
		{"no autostart alone", Command{Transport: "stdio", NoAutostart: true}, ErrNoAutostart.Error()},
		{"negative idle", Command{Transport: "stdio", IdleTimeout: -time.Second}, "--idle-timeout and --max-wait must not be negative"},
		{"negative wait", Command{Transport: "stdio", MaxWait: -time.Second}, "--idle-timeout and --max-wait must not be negative"},
		{"allowed host on stdio", Command{Transport: "stdio", AllowedHosts: []string{"box.example"}}, "--allowed-host is only supported with --transport http"},
		{"http without token", Command{Transport: "http"}, ErrHTTPToken.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Getenv = noEnv
			err := tc.c.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want %q", err, tc.want)
			}
			if tc.want == ErrHTTPToken.Error() && !errors.Is(err, ErrHTTPToken) {
				t.Errorf("Run = %v, not ErrHTTPToken", err)
			}
		})
	}
}
