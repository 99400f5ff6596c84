package hosttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// modelsRow is a row of `avenor backends --models --json`, the fields the
// catalog adds; raw keeps every key to tell absent from empty.
type modelsRow struct {
	Backend      string            `json:"backend"`
	Ready        bool              `json:"ready"`
	Auth         string            `json:"auth"`
	Capabilities map[string]string `json:"capabilities"`
	Models       []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"models"`
	ModelsError string `json:"models_error"`
	raw         map[string]json.RawMessage
}

func backendsJSON(t *testing.T, res result) map[string]modelsRow {
	t.Helper()
	if res.code != 0 {
		t.Fatalf("%v", res)
	}
	var rows []modelsRow
	var raws []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &rows); err != nil {
		t.Fatalf("backends --json: %v\n%s", err, res.stdout)
	}
	if err := json.Unmarshal([]byte(res.stdout), &raws); err != nil {
		t.Fatal(err)
	}
	out := map[string]modelsRow{}
	for i, r := range rows {
		r.raw = raws[i]
		out[r.Backend] = r
	}
	return out
}

// TestBackendsModelsJSON: `avenor backends --models --json` gives each row
// a models array (the scripted backend's fixed list; [] for a backend that
// does not list models, never null), capabilities.model_listing, and auth
// in the catalog's vocabulary.
func TestBackendsModelsJSON(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rows := backendsJSON(t, w.run("backends", "--models", "--json"))
	s, ok := rows["scripted"]
	if !ok {
		t.Fatalf("no scripted row: %v", rows)
	}
	var ids []string
	for _, m := range s.Models {
		ids = append(ids, m.ID)
	}
	if !reflect.DeepEqual(ids, []string{"scripted/fast", "scripted/thorough"}) || s.Models[0].Name != "Scripted (fast)" {
		t.Errorf("scripted models %+v", s.Models)
	}
	if !s.Ready || s.ModelsError != "" || s.Capabilities["model_listing"] != "supported" || s.Auth != "unknown" {
		t.Errorf("scripted row %+v", s)
	}
	e, ok := rows["echo"]
	if !ok {
		t.Fatalf("no echo row")
	}
	if string(e.raw["models"]) != "[]" || e.Capabilities["model_listing"] != "unsupported" || !e.Ready || e.Auth != "unknown" {
		t.Errorf("echo row: models %s, %+v", e.raw["models"], e)
	}
	for name, r := range rows {
		if _, ok := r.raw["models"]; !ok && r.raw["error"] == nil {
			t.Errorf("%s: no models key under --models", name)
		}
		switch r.Auth {
		case "authenticated", "required", "rejected", "unknown":
		default:
			if r.raw["error"] == nil {
				t.Errorf("%s: auth %q outside authenticated|required|rejected|unknown", name, r.Auth)
			}
		}
	}

	table := w.run("backends", "--models")
	if table.code != 0 {
		t.Fatalf("%v", table)
	}
	var line string
	for _, l := range strings.Split(table.stdout, "\n") {
		if strings.HasPrefix(l, "scripted ") {
			line = l
		}
		if n := len([]rune(l)); n > 100 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(line, "scripted/fast, scripted/thorough") || !strings.HasPrefix(table.stdout, "BACKEND") {
		t.Errorf("backends --models:\n%s", table.stdout)
	}
}

// TestBackendsModelsCatalogFails: a catalog that fails or hangs never
// hides a usable backend: the row stays, ready, with models [] and
// models_error; a hanging one is cut at the catalog's time limit (15 s).
func TestBackendsModelsCatalogFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"fail", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			start := time.Now()
			res := w.runEnv([]string{"SCRIPTED_CATALOG=" + mode}, "backends", "--models", "--json")
			took := time.Since(start)
			s, ok := backendsJSON(t, res)["scripted"]
			if !ok {
				t.Fatalf("the scripted row is gone:\n%s", res.stdout)
			}
			if !s.Ready || s.ModelsError == "" || string(s.raw["models"]) != "[]" || s.Capabilities["model_listing"] != "supported" {
				t.Errorf("scripted row with a failing catalog: models %s, %+v", s.raw["models"], s)
			}
			if mode == "hang" && (took < 14*time.Second || took > 45*time.Second) {
				t.Errorf("a hanging catalog took %v; want the 15 s limit", took)
			}
			// A hanging catalog's error is the host's ("did not answer
			// within the catalog's time limit") or, when the plugin
			// notices its deadline first, the plugin's own.
			if mode == "hang" && !strings.Contains(s.ModelsError, "time limit") && !strings.Contains(s.ModelsError, "hung") {
				t.Errorf("a hanging catalog's error %q does not say it ran out of time", s.ModelsError)
			}
			if mode != "fail" {
				return
			}
			table := w.runEnv([]string{"SCRIPTED_CATALOG=" + mode}, "backends", "--models", "-o", "wide")
			if !strings.Contains(table.stdout, "error: scripted catalog failed") {
				t.Errorf("the table does not say why:\n%s", table.stdout)
			}
		})
	}
}

// TestBackendsWithoutModelsUnchanged: without --models, `avenor backends`
// (narrow, -o wide, --json) prints what it printed before the catalog
// existed: the echo and scripted rows against golden files taken from that
// build, no --models key in any row.
func TestBackendsWithoutModelsUnchanged(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "backends", name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// Column widths follow every installed plugin's row: compare cells.
	pick := func(out string) string {
		var b strings.Builder
		for _, l := range strings.Split(out, "\n") {
			for _, p := range []string{"BACKEND", "echo ", "scripted ", "yes:", "*:"} {
				if strings.HasPrefix(l, p) {
					b.WriteString(strings.Join(strings.Fields(l), " ") + "\n")
					break
				}
			}
		}
		return b.String()
	}
	for name, args := range map[string][]string{"table": {"backends"}, "wide": {"backends", "-o", "wide"}} {
		res := w.run(args...)
		if got := pick(res.stdout); res.code != 0 || got != golden(name) {
			t.Errorf("%v:\n%s\nwant:\n%s", args, got, golden(name))
		}
	}

	res := w.run("backends", "--json")
	if res.code != 0 {
		t.Fatalf("%v", res)
	}
	var all []map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &all); err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	if err := json.Unmarshal([]byte(golden("json")), &want); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, r := range all {
		for _, k := range []string{"models", "models_error", "models_truncated", "auth_message"} {
			if _, ok := r[k]; ok {
				t.Errorf("%v: key %s without --models", r["backend"], k)
			}
		}
		if caps, _ := r["capabilities"].(map[string]any); caps["model_listing"] != nil {
			t.Errorf("%v: capabilities.model_listing without --models", r["backend"])
		}
		// The machine's sandbox mechanisms are pinned by
		// TestBackendsSandboxMechanisms.
		delete(r, "sandbox_mechanisms")
		if b := r["backend"]; b == "echo" || b == "scripted" {
			r["plugin_path"] = "PLUGINDIR/" + filepath.Base(r["plugin_path"].(string))
			got = append(got, r)
		}
	}
	// Capabilities added later by other features are theirs to pin: the
	// golden's keys must keep their values.
	for i := range got {
		if i >= len(want) {
			break
		}
		gc, _ := got[i]["capabilities"].(map[string]any)
		wc, _ := want[i]["capabilities"].(map[string]any)
		for k := range gc {
			if _, ok := wc[k]; !ok {
				delete(gc, k)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("backends --json rows:\n%s\nwant:\n%s", gb, golden("json"))
	}
}
