package hosttest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateSpendGolden = flag.Bool("update-spend-golden", false, "rewrite testdata/spend/*.golden.ndjson")

// spendGoldenScript reports usage, as a turn under a limit does.
const spendGoldenScript = "say hello\ntool t\nusage in=3 out=4"

// normalizedEvents are a log's events with what differs between runs
// (time, paths, session ids, process ids) replaced, one JSON line each.
func normalizedEvents(t *testing.T, evs []event, work string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		for _, k := range []string{"ts", "pid", "plugin_version"} {
			if _, ok := e[k]; ok {
				e[k] = "X"
			}
		}
		if e.str("session_id") != "" {
			e["session_id"] = "SES"
		}
		if e.str("dir") == work {
			e["dir"] = "WORK"
		}
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		line, err := json.Marshal(map[string]any(e))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSpendOptionsAbsentStreamUnchanged: a run that sets no spend option
// writes exactly the stream it wrote before spend limits existed (the
// golden file), usage and cost reported or not; and one with a limit it
// never reaches writes the same stream too (nothing of the limit shows
// until it is reached).
func TestSpendOptionsAbsentStreamUnchanged(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("testdata", "spend", "no_options.golden.ndjson")
	for _, flags := range [][]string{nil, {"--spend-tokens", "1000000", "--spend-usd", "100", "--spend-wall", "1h"}} {
		w := newWorld(t)
		evPath := w.path("events.ndjson")
		args := append([]string{"--backend", "scripted", "--prompt", spendGoldenScript, "--on-event", evPath, "--run-id", "feedfacecafe0052"}, flags...)
		if res := w.runEnv(nil, args...); res.code != 0 {
			t.Fatalf("%v: %v", flags, res)
		}
		got := normalizedEvents(t, readEvents(t, evPath), w.work)
		if *updateSpendGolden && flags == nil {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (it was written with -update-spend-golden by the code before spend limits, AVENOR_TEST_BIN pointing at its binaries)", err)
		}
		if got != string(want) {
			t.Errorf("flags %v: the event stream differs from %s:\ngot:\n%s\nwant:\n%s", flags, golden, got, want)
		}
	}
}
