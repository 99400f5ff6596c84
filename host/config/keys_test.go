package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestKeysMatchSettings keeps the key table, the Settings struct and the
// defaults in step: every koanf tag has a KeyDoc and the reverse.
func TestKeysMatchSettings(t *testing.T) {
	tags := map[string]bool{}
	st := reflect.TypeFor[Settings]()
	for i := range st.NumField() {
		tag := st.Field(i).Tag.Get("koanf")
		if tag == "" {
			t.Errorf("Settings.%s has no koanf tag", st.Field(i).Name)
		}
		tags[tag] = true
	}
	seen := map[string]bool{}
	for _, k := range Keys() {
		if !tags[k.Key] {
			t.Errorf("Keys has %q, which Settings lacks", k.Key)
		}
		if seen[k.Key] {
			t.Errorf("Keys lists %q twice", k.Key)
		}
		seen[k.Key] = true
		if k.Key == "backends" {
			if k.Env != "" || k.Flag != "" {
				t.Errorf("backends must not be read from env or flags: %+v", k)
			}
			continue
		}
		if k.Env != "AVENOR_"+strings.ToUpper(k.Key) {
			t.Errorf("%s: env %q", k.Key, k.Env)
		}
		if k.Type == "" || k.Default == "" || k.Meaning == "" {
			t.Errorf("incomplete doc: %+v", k)
		}
	}
	for tag := range tags {
		if !seen[tag] {
			t.Errorf("Settings has %q, which Keys lacks", tag)
		}
	}
}

func TestKeysEnvAvoidsOtherVariables(t *testing.T) {
	others := []string{"AVENOR_PLUGIN_PATH", "AVENOR_CONTROL_READY_FD", "AVENOR_CONTROL_IDENTITY_TOKEN",
		"AVENOR_TREE_BUDGET", "AVENOR_CLAUDE_TERMINAL", "AVENOR_OPENCODE_URL"}
	for _, k := range Keys() {
		for _, o := range others {
			if k.Env == o {
				t.Errorf("%s reads %s, which means something else", k.Key, o)
			}
		}
	}
}

func TestKeysReturnsCopy(t *testing.T) {
	Keys()[0].Key = "mutated"
	if Keys()[0].Key == "mutated" {
		t.Error("Keys shares its slice")
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"timout", "timeout", 1}, {"lable", "label", 2}, {"abc", "", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
