package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listTools connects an in-memory client to a new Server and lists its
// tools as a client receives them.
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	dir := t.TempDir()
	s, err := New(Options{ControlSocket: dir + "/s.sock", StateDir: dir + "/state", Home: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// TestToolSchemasAreObjects: every input and output schema, at every
// depth, is an object schema naming its type: no boolean `true` schema
// (what an `any` field infers), which the official TypeScript SDK rejects
// with the whole tool list.
func TestToolSchemasAreObjects(t *testing.T) {
	tools := listTools(t)
	if len(tools) != len(ToolNames) {
		t.Fatalf("%d tools, want %d", len(tools), len(ToolNames))
	}
	for _, tl := range tools {
		for kind, sch := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, _ := json.Marshal(sch)
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if m, _ := v.(map[string]any); m == nil || m["type"] != "object" {
				t.Errorf("%s %s schema is not an object schema: %s", tl.Name, kind, b)
				continue
			}
			if err := checkNode("", v); err != nil {
				t.Errorf("%s %s schema: %v", tl.Name, kind, err)
			}
			if strings.Contains(string(b), ":true") && !strings.Contains(string(b), `"additionalProperties":false`) {
				t.Errorf("%s %s schema holds a boolean schema: %s", tl.Name, kind, b)
			}
		}
	}
}

// TestToolAnnotations: a title on every tool; the read-only ones say so,
// shutdown and cancel are destructive, nothing else is read-only.
func TestToolAnnotations(t *testing.T) {
	readOnly := map[string]bool{"avenor_status": true, "avenor_events": true, "avenor_result": true, "avenor_list_backends": true}
	destructive := map[string]bool{"avenor_shutdown": true, "avenor_cancel": true}
	for _, tl := range listTools(t) {
		a := tl.Annotations
		if a == nil || tl.Title == "" || a.Title != tl.Title {
			t.Errorf("%s: title %q, annotations %+v", tl.Name, tl.Title, a)
			continue
		}
		if a.ReadOnlyHint != readOnly[tl.Name] {
			t.Errorf("%s: readOnlyHint %v", tl.Name, a.ReadOnlyHint)
		}
		if d := a.DestructiveHint != nil && *a.DestructiveHint; destructive[tl.Name] && !d {
			t.Errorf("%s: not destructive", tl.Name)
		}
		if (tl.Name == "avenor_spawn" || tl.Name == "avenor_follow_up") && (a.DestructiveHint == nil || *a.DestructiveHint) {
			t.Errorf("%s: adds runs only, but destructiveHint is not false", tl.Name)
		}
	}
}

// TestToolEnums: the closed vocabularies are enums a client can offer.
func TestToolEnums(t *testing.T) {
	want := map[string]map[string]string{
		"avenor_status": {"wait_for": "terminal,phase_change,turn_complete,permission", "view": "lifecycle,full"},
		"avenor_spawn":  {"thinking": strings.Join(thinkingLevels, ",")},
	}
	for _, tl := range listTools(t) {
		b, _ := json.Marshal(tl.InputSchema)
		var sch struct {
			Properties map[string]struct {
				Type any      `json:"type"`
				Enum []string `json:"enum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(b, &sch); err != nil {
			t.Fatal(err)
		}
		for prop, values := range want[tl.Name] {
			if got := strings.Join(sch.Properties[prop].Enum, ","); got != values {
				t.Errorf("%s.%s enum %q, want %q", tl.Name, prop, got, values)
			}
		}
		if _, ok := sch.Properties["timeout"]; ok {
			var tm struct {
				Properties struct {
					Timeout struct {
						AnyOf []struct {
							Type string `json:"type"`
						} `json:"anyOf"`
					} `json:"timeout"`
				} `json:"properties"`
			}
			_ = json.Unmarshal(b, &tm)
			if a := tm.Properties.Timeout.AnyOf; len(a) != 2 || a[0].Type != "number" || a[1].Type != "string" {
				t.Errorf("%s.timeout: want anyOf a number or a string, got %+v", tl.Name, a)
			}
		}
	}
}

func TestTimeoutArg(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		bad  bool
	}{
		{`60`, 60, false}, {`60.0`, 60, false}, {`"60"`, 60, false}, {`"5m"`, 300, false},
		{`1.5`, 0, true}, {`0`, 0, true}, {`-3`, 0, true}, {`1e12`, 0, true}, {`"soon"`, 0, true},
	} {
		var a statusArgs
		err := json.Unmarshal([]byte(`{"timeout":`+c.in+`}`), &a)
		secs := 0
		if err == nil {
			secs, err = parseTimeout("timeout", string(a.Timeout))
		}
		if c.bad != (err != nil) || (!c.bad && secs != c.want) {
			t.Errorf("timeout %s: %d, %v", c.in, secs, err)
		}
	}
}
