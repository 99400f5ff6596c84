package client_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/stable"
)

// wireFields maps a struct's JSON names to their Go types.
func wireFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = f.Type
	}
	return out
}

// TestSpawnParamsMatchTheServer pins client.SpawnParams to the params the
// supervisor decodes, field by field: a field the client cannot
// send, or sends in a shape that loses a value (a bool with omitempty where
// the server tells false from absent), is a drift this test names.
func TestSpawnParamsMatchTheServer(t *testing.T) {
	// Known differences, each with its reason. Add to this list only with one.
	known := map[string]string{
		"label_derived": "set by a parent supervisor for its nested spawns, not by harnesses",
		"timeout":       "any on the client (seconds or a duration string), raw JSON on the server",
		// The same shape as timeout's.
		"progress_timeout": "any on the client (seconds or a duration string), raw JSON on the server",
		"tool_timeout":     "any on the client (seconds or a duration string), raw JSON on the server",
		"spend_wall":       "any on the client (seconds or a duration string), raw JSON on the server",
		"allowed_tools":    "any on the client (a list or a comma string), raw JSON on the server",
	}
	cl := wireFields(reflect.TypeOf(client.SpawnParams{}))
	srv := wireFields(reflect.TypeOf(stable.SpawnParams{}))
	for name, st := range srv {
		if _, ok := known[name]; ok {
			continue
		}
		ct, ok := cl[name]
		if !ok {
			t.Errorf("the server takes %q (%v); client.SpawnParams cannot send it", name, st)
			continue
		}
		if ct != st {
			t.Errorf("%q is %v in client.SpawnParams but %v on the server", name, ct, st)
		}
	}
	for name := range cl {
		if _, ok := srv[name]; !ok {
			t.Errorf("client.SpawnParams sends %q, which the server does not take", name)
		}
	}
}

// TestSpawnParamsWithAbsPaths: every path param is made absolute against
// the working directory, a file: handler's base too; the rest is kept.
func TestSpawnParamsWithAbsPaths(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { return filepath.Join(wd, p) }
	in := client.SpawnParams{Prompt: "x", PromptFile: "p.md", Dir: "work", OnEvent: "ev.ndjson", SentinelFile: "/tmp/s.done",
		RosterFile: "r.toml", LoopFile: "l.toml", TeamFile: "t.toml", PermissionHandler: "file:perm", Label: "rel/label"}
	got, err := in.WithAbsPaths()
	if err != nil {
		t.Fatal(err)
	}
	want := client.SpawnParams{Prompt: "x", PromptFile: abs("p.md"), Dir: abs("work"), OnEvent: abs("ev.ndjson"), SentinelFile: "/tmp/s.done",
		RosterFile: abs("r.toml"), LoopFile: abs("l.toml"), TeamFile: abs("t.toml"), PermissionHandler: "file:" + abs("perm"), Label: "rel/label"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithAbsPaths:\n got %+v\nwant %+v", got, want)
	}
	if got, _ := (client.SpawnParams{}).WithAbsPaths(); !reflect.DeepEqual(got, client.SpawnParams{}) {
		t.Errorf("empty params gained paths: %+v", got)
	}
}

// TestErrorCodesPinned: the codes of docs/control-protocol.md#errors never change, and the
// client's are the server's (host/control's).
func TestErrorCodesPinned(t *testing.T) {
	for _, c := range []struct {
		name           string
		client, server int
		want           int
	}{
		{"parse error", client.CodeParseError, control.CodeParseError, -32700},
		{"invalid request", client.CodeInvalidRequest, control.CodeInvalidRequest, -32600},
		{"method not found", client.CodeMethodNotFound, control.CodeMethodNotFound, -32601},
		{"invalid params", client.CodeInvalidParams, control.CodeInvalidParams, -32602},
		{"server error", client.CodeServerError, control.CodeServerError, -32000},
		{"no pending permission", client.CodeNoPendingPermission, control.CodeNoPendingPermission, -32001},
		{"permission denied", client.CodePermissionDenied, control.CodePermissionDenied, -32010},
		{"prompt unsupported", client.CodePromptUnsupported, control.CodePromptUnsupported, -32020},
	} {
		if c.client != c.want || c.server != c.want {
			t.Errorf("%s: client %d, server %d; the contract says %d", c.name, c.client, c.server, c.want)
		}
	}
}

func TestPhaseOf(t *testing.T) {
	for code, want := range map[int]string{0: client.PhaseDone, 1: client.PhaseFailed, 2: client.PhaseFailed,
		5: client.PhaseFailed, 124: client.PhaseTimeout, 130: client.PhaseKilled} {
		if got := client.PhaseOf(code); got != want {
			t.Errorf("PhaseOf(%d) = %q, want %q", code, got, want)
		}
	}
}
