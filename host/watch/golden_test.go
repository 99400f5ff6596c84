package watch

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// outputs are the four output shapes pinned by golden files:
// testdata/<log>.ndjson → testdata/<log>.<name>.golden.
var outputs = []struct {
	name string
	p    Printer
}{
	{"plain", Printer{}},
	{"json", Printer{Format: JSON}},
	{"plain_classify", Printer{Classify: true}},
	{"json_classify", Printer{Format: JSON, Classify: true}},
	{"transcript", Printer{Format: Transcript}},
}

func TestGolden(t *testing.T) {
	logs, err := filepath.Glob("testdata/*.ndjson")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no testdata logs: %v", err)
	}
	for _, log := range logs {
		for _, o := range outputs {
			golden := strings.TrimSuffix(log, ".ndjson") + "." + o.name + ".golden"
			t.Run(filepath.Base(golden), func(t *testing.T) {
				var out bytes.Buffer
				res, err := Run(context.Background(), log, &out, Config{Printer: o.p})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if fi, _ := os.Stat(log); res.Offset != fi.Size() {
					t.Errorf("Offset = %d, want the log's size %d", res.Offset, fi.Size())
				}
				if *update {
					if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got := out.String(); got != string(want) {
					t.Errorf("output differs from %s\n--- got\n%s--- want\n%s", golden, got, want)
				}
			})
		}
	}
}

// TestJSONIsPassThrough: without --classify, JSON output is the log's event
// lines byte for byte; only lines without an event, blank and malformed lines
// are left out.
func TestJSONIsPassThrough(t *testing.T) {
	log := "testdata/session.ndjson"
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		if ev, err := ParseLine([]byte(line)); err == nil && ev.Name() != "" {
			want.WriteString(line)
		}
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), log, &out, Config{Printer: Printer{Format: JSON}})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("json output is not the event lines unchanged:\n%s", out.String())
	}
	if res.Malformed != 1 || res.Events != 23 {
		t.Errorf("Result = %+v, want 23 events and 1 malformed line", res)
	}
}
