package mcpserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// The tools' input and output schemas are inferred from the args and result
// structs, then every field the inference cannot describe is given an
// explicit schema here: an `any` or map value infers the empty schema,
// which marshals as the boolean schema `true`, and the official MCP
// TypeScript SDK (and the inspector built on it) rejects a whole tool list
// in which a property's schema is not an object. schemaOf refuses to build
// a schema that still holds one, so a new free-form field fails every test
// at once instead of hiding every tool from such a client.

// obj is an object schema with the given properties; the object may hold
// more keys than it names.
func obj(desc string, props map[string]*jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: desc, Properties: props}
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func arrayOf(desc string, items *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Description: desc, Items: items}
}

func enum(desc string, values []string) *jsonschema.Schema {
	e := make([]any, len(values))
	for i, v := range values {
		e[i] = v
	}
	return &jsonschema.Schema{Type: "string", Description: desc, Enum: e}
}

// durationSchema is a timeout: a number of seconds, or a string of them
// with an optional s, m or h suffix.
// Each branch has a single type: a client that maps schemas onto a
// single-type dialect (Gemini's function declarations) takes anyOf, not a
// type array.
func durationSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Description: desc + " (a number of seconds, or a string: 30, 90s, 5m, 1h)",
		AnyOf: []*jsonschema.Schema{{Type: "number"}, {Type: "string"}}}
}

// permissionSchema is a pending permission request: the fields of its
// permission.request event.
func permissionSchema() *jsonschema.Schema {
	return obj("the pending permission request (the fields of its permission.request event); answer it with avenor_answer_permission",
		map[string]*jsonschema.Schema{
			"request_id": str("the request's id (avenor_answer_permission request_id)"),
			"options": arrayOf("the answers it takes; pass one optionId as avenor_answer_permission option_id",
				obj("one answer", map[string]*jsonschema.Schema{"optionId": str("the option's id"), "name": str("what it does"), "kind": str("allow_once, allow_always, reject_once, reject_always …")})),
		})
}

// usageSchema is a run's token usage as the runtime reports it.
func usageSchema() *jsonschema.Schema { return obj("token usage as the runtime reports it", nil) }

// watchdogSchema is a status's last turn-watchdog firing (docs/unattended.md).
func watchdogSchema() *jsonschema.Schema {
	return obj("the run's last turn-watchdog firing, once it fired", map[string]*jsonschema.Schema{
		"kind":        str("tool (a tool call whose processes did nothing) or progress (no event)"),
		"tool":        str("the hung tool call's id"),
		"action":      str("warn, cancel or restart"),
		"at":          {Type: "integer", Description: "when it fired, Unix ms"},
		"idle_for_ms": {Type: "integer", Description: "how long nothing happened"},
		"count":       {Type: "integer", Description: "the run's firings so far"},
	})
}

// spendSchema is a run's spend limits and what it spent
// (docs/unattended.md#spend-limits).
func spendSchema() *jsonschema.Schema {
	return obj("the run's spend limits and what it spent, when it has limits", map[string]*jsonschema.Schema{
		"reached":      str("the limit reached (tokens, usd or wall); empty when none"),
		"spent_tokens": {Type: "integer", Description: "tokens counted"},
		"spent_usd":    {Type: "number", Description: "US dollars counted"},
		"policy":       str("finish or interrupt"),
		"scope":        str("runtime or tree"),
	})
}

// eventSchema is one event of a run's log (docs/events.md: flat, `event`
// names the type).
func eventSchema() *jsonschema.Schema {
	return obj("one event of the run's log", map[string]*jsonschema.Schema{
		"event": str("the event type, e.g. session.end"),
		"seq":   {Type: "integer", Description: "the event's sequence number in its run"},
	})
}

// backendSchema is one row of avenor_list_backends (`avenor backends --json`).
func backendSchema() *jsonschema.Schema {
	return obj("one installed backend", map[string]*jsonschema.Schema{
		"backend":         str("the name to pass as avenor_spawn backend"),
		"plugin":          str("the plugin serving it"),
		"ready":           {Type: "boolean", Description: "whether its runtime (CLI, login) is usable here"},
		"message":         str("what to fix when it is not ready"),
		"capabilities":    obj("capability name → supported, experimental, unverified or unsupported", nil),
		"thinking_levels": arrayOf("the thinking levels it takes", str("")),
		"error":           str("why the plugin did not start"),
	})
}

// schemaOf infers T's schema and replaces the properties named in fix.
// It panics on a schema an MCP client would reject (a programming error
// every test catches).
func schemaOf[T any](fix map[string]*jsonschema.Schema) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	notNull(s)
	for name, p := range fix {
		if _, ok := s.Properties[name]; !ok {
			panic(fmt.Sprintf("schema of %T: no property %q to replace", *new(T), name))
		}
		if p.Description == "" {
			p.Description = s.Properties[name].Description
		}
		s.Properties[name] = p
	}
	if err := checkSchema(s); err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err))
	}
	return s
}

// notNull gives every inferred ["null", X] (a slice or pointer field) the
// single type X: no argument is ever null, and every result leaves an
// empty list or pointer out (omitempty) or sends []; a type array is less
// portable than one type.
func notNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		notNull(p)
	}
	notNull(s.Items)
	notNull(s.AdditionalProperties)
}

// statusOutSchema is avenor_status' result: one run (runStatus, in its full
// or lifecycle view), or with no run_id the list {"runs": [...], "count": N}.
func statusOutSchema() *jsonschema.Schema {
	run := func() *jsonschema.Schema {
		r := schemaOf[runStatus](map[string]*jsonschema.Schema{"permission": permissionSchema(), "usage": usageSchema(), "watchdog": watchdogSchema(), "spend": spendSchema()})
		r.Required, r.AdditionalProperties = nil, nil // the lifecycle view keeps a few keys
		return r
	}
	s := run()
	s.Description = "one run, or with no run_id every run (runs, count)"
	s.Properties["runs"] = arrayOf("every run, when no run_id was given", run())
	s.Properties["count"] = &jsonschema.Schema{Type: "integer", Description: "how many runs, when no run_id was given"}
	if err := checkSchema(s); err != nil {
		panic(err)
	}
	return s
}

// checkSchema refuses what the official TypeScript SDK rejects and what
// leaves a client guessing: a property or item schema that is the boolean
// `true` (or empty) or names no type.
func checkSchema(s *jsonschema.Schema) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return checkNode("", v)
}

func checkNode(path string, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema %v is not an object schema", orRoot(path), v)
	}
	if branches, ok := m["anyOf"].([]any); ok {
		for i, b := range branches {
			if err := checkNode(fmt.Sprintf("%s/anyOf/%d", path, i), b); err != nil {
				return err
			}
		}
		return nil
	}
	switch t := m["type"].(type) {
	case string:
	case nil:
		return fmt.Errorf("%s: schema names no type", orRoot(path))
	default:
		return fmt.Errorf("%s: type %v is not a single type (use anyOf)", orRoot(path), t)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if err := checkNode(path+"/properties/"+k, props[k]); err != nil {
				return err
			}
		}
	}
	if items, ok := m["items"]; ok {
		if err := checkNode(path+"/items", items); err != nil {
			return err
		}
	}
	if ap, ok := m["additionalProperties"]; ok && ap != false {
		// false refuses unknown keys (every input schema); a schema here
		// must be a real one.
		if err := checkNode(path+"/additionalProperties", ap); err != nil {
			return err
		}
	}
	return nil
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// timeoutArg is a timeout argument: a JSON number of seconds or a string
// (30, 90s, 5m, 1h); parseTimeout reads its text either way.
type timeoutArg string

func (t *timeoutArg) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, `"`) {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*t = timeoutArg(v)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("timeout must be a number of seconds or a string such as 90s, got %s", s)
	}
	if f == math.Trunc(f) && math.Abs(f) <= maxTimeoutSeconds {
		s = strconv.Itoa(int(f)) // 60 and 60.0 alike; parseTimeout judges the value
	}
	*t = timeoutArg(s)
	return nil
}

// into sets *dst to t's seconds (parseTimeout, reporting name) when t is
// given, and leaves it alone when not.
func (t timeoutArg) into(name string, dst *any) error {
	if t == "" {
		return nil
	}
	secs, err := parseTimeout(name, string(t))
	if err != nil {
		return err
	}
	*dst = secs
	return nil
}
