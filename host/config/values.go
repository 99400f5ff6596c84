package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// fieldErr is a problem with one key inside a layer; load.go adds the layer.
type fieldErr struct {
	key string
	err error
}

func invalidf(format string, args ...any) error {
	return &detailError{msg: fmt.Sprintf(format, args...), kind: ErrInvalidValue}
}

// parseValue converts a value from any layer to the type Settings holds.
// Strings are accepted for every kind (env values are always strings, and
// durations are always written as strings); TOML integers and booleans are
// accepted where they fit. Durations and integers must not be negative.
func parseValue(k kind, v any) (any, error) {
	switch k {
	case kindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, invalidf("want a string, got %s", describe(v))

	case kindDuration:
		var d time.Duration
		switch x := v.(type) {
		case time.Duration:
			d = x
		case string:
			var err error
			if d, err = time.ParseDuration(strings.TrimSpace(x)); err != nil {
				return nil, invalidf("invalid duration %q (want a Go duration such as \"90s\" or \"5m\")", x)
			}
		case int64:
			if x != 0 {
				return nil, invalidf("invalid duration %d (write it as a string with a unit, such as \"%ds\")", x, x)
			}
		case int:
			if x != 0 {
				return nil, invalidf("invalid duration %d (write it as a string with a unit, such as \"%ds\")", x, x)
			}
		default:
			return nil, invalidf("invalid duration: want a string such as \"90s\", got %s", describe(v))
		}
		if d < 0 {
			return nil, invalidf("invalid duration %q: must not be negative", d.String())
		}
		return d, nil

	case kindInt:
		var n int64
		switch x := v.(type) {
		case int:
			n = int64(x)
		case int64:
			n = x
		case string:
			var err error
			if n, err = strconv.ParseInt(strings.TrimSpace(x), 10, 0); err != nil {
				return nil, invalidf("invalid integer %q", x)
			}
		default:
			return nil, invalidf("invalid integer: want a whole number, got %s", describe(v))
		}
		if n < 0 {
			return nil, invalidf("invalid integer %d: must not be negative", n)
		}
		if n > math.MaxInt {
			return nil, invalidf("invalid integer %d: too large", n)
		}
		return int(n), nil

	case kindNumber:
		return parseNumber(v)

	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return nil, invalidf("invalid boolean %q (want true or false)", x)
			}
			return b, nil
		}
		return nil, invalidf("invalid boolean: want true or false, got %s", describe(v))
	}
	return nil, invalidf("cannot be set here")
}

// describe names a decoded TOML value's type, for error messages. It never
// includes the value, which may be a secret.
func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int, int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("a %T", v)
}

var backendFields = []string{"env", "options", "plugin"}

// parseBackends checks the backends table of a config file and returns it
// in the shape koanf merges. Names and keys must not contain "." (koanf's
// key delimiter), so that a table cannot be split or merged into another.
func parseBackends(v any) (map[string]any, []fieldErr) {
	tables, ok := v.(map[string]any)
	if !ok {
		return nil, []fieldErr{{"backends", invalidf("want a table of [backends.<name>] tables, got %s", describe(v))}}
	}
	var errs []fieldErr
	out := make(map[string]any, len(tables))
	for _, name := range sortedKeys(tables) {
		path := "backends." + name
		if name == "" || strings.Contains(name, ".") {
			errs = append(errs, fieldErr{"backends", invalidf("backend name %q must be non-empty and must not contain \".\"", name)})
			continue
		}
		table, ok := tables[name].(map[string]any)
		if !ok {
			errs = append(errs, fieldErr{path, invalidf("want a table, got %s", describe(tables[name]))})
			continue
		}
		b := make(map[string]any, len(table))
		for _, field := range sortedKeys(table) {
			fpath := path + "." + field
			fv := table[field]
			switch field {
			case "plugin":
				if s, ok := fv.(string); ok {
					b[field] = s
				} else {
					errs = append(errs, fieldErr{fpath, invalidf("want a string naming a plugin family, got %s", describe(fv))})
				}
			case "env":
				env, ferrs := parseBackendEnv(fpath, fv)
				errs = append(errs, ferrs...)
				if env != nil {
					b[field] = env
				}
			case "options":
				opts, ok := fv.(map[string]any)
				if !ok {
					errs = append(errs, fieldErr{fpath, invalidf("want a table, got %s", describe(fv))})
					continue
				}
				if ferr := checkOptionKeys(fpath, opts); ferr != nil {
					errs = append(errs, *ferr)
					continue
				}
				b[field] = opts
			default:
				errs = append(errs, fieldErr{fpath, unknownKey(field, backendFields)})
			}
		}
		out[name] = b
	}
	return out, errs
}

// parseBackendEnv checks an env table. Its values may be secrets, so no
// message quotes them.
func parseBackendEnv(path string, v any) (map[string]any, []fieldErr) {
	table, ok := v.(map[string]any)
	if !ok {
		return nil, []fieldErr{{path, invalidf("want a table of VARIABLE = \"value\", got %s", describe(v))}}
	}
	var errs []fieldErr
	env := make(map[string]any, len(table))
	for _, name := range sortedKeys(table) {
		if name == "" || strings.ContainsAny(name, ".=\x00") {
			errs = append(errs, fieldErr{path, invalidf("variable name %q must be non-empty and must not contain \".\", \"=\" or NUL", name)})
			continue
		}
		s, ok := table[name].(string)
		if !ok {
			errs = append(errs, fieldErr{path + "." + name, invalidf("want a string, got %s", describe(table[name]))})
			continue
		}
		env[name] = s
	}
	return env, errs
}

func checkOptionKeys(path string, opts map[string]any) *fieldErr {
	for _, k := range sortedKeys(opts) {
		if k == "" || strings.Contains(k, ".") {
			return &fieldErr{path, invalidf("option name %q must be non-empty and must not contain \".\"", k)}
		}
		if sub, ok := opts[k].(map[string]any); ok {
			if ferr := checkOptionKeys(path+"."+k, sub); ferr != nil {
				return ferr
			}
		}
	}
	return nil
}

// unknownKey reports key as unknown, suggesting the nearest known key when
// it looks like a typo and listing the known keys otherwise.
func unknownKey(key string, known []string) error {
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return &detailError{msg: fmt.Sprintf("%s (did you mean %q?)", ErrUnknownKey, best), kind: ErrUnknownKey}
	}
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	return &detailError{msg: fmt.Sprintf("%s (known keys: %s)", ErrUnknownKey, strings.Join(sorted, ", ")), kind: ErrUnknownKey}
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseNumber is a kindNumber value: a finite, non-negative number.
func parseNumber(v any) (any, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case string:
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return nil, invalidf("invalid number %q", x)
		}
	default:
		return nil, invalidf("invalid number: want a number such as 2.5, got %s", describe(v))
	}
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, invalidf("invalid number %v: must be finite and not negative", f)
	}
	return f, nil
}
