package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/internal/docgen"
)

// testBin is the directory of the built avenor and plugins (make test sets
// AVENOR_TEST_BIN); tests that need the binaries skip without it.
func testBin(t *testing.T) string {
	t.Helper()
	d := os.Getenv("AVENOR_TEST_BIN")
	if d == "" {
		t.Skip("AVENOR_TEST_BIN is not set (make test sets it to bin/)")
	}
	if _, err := os.Stat(filepath.Join(d, "avenor")); err != nil {
		t.Fatalf("AVENOR_TEST_BIN=%s has no avenor: %v", d, err)
	}
	return d
}

func page(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pages(t *testing.T) map[string]string {
	t.Helper()
	names, _ := filepath.Glob("*.md")
	out := map[string]string{}
	for _, n := range names {
		out[n] = page(t, n)
	}
	return out
}

func builtPlugins(t *testing.T) []docgen.Plugin {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ps, err := docgen.Describe(ctx, testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

var backendCell = regexp.MustCompile("^(?:\\| |- )`([^`]+)`")

// TestGeneratedUpToDate regenerates every generated page into a temporary
// directory and compares: `make docs` must leave no diff. Rows of
// plugin-derived sections whose backend no built plugin serves are
// tolerated (that plugin is not built here); a built plugin's rows must
// match exactly.
func TestGeneratedUpToDate(t *testing.T) {
	bin := testBin(t)
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "avenor"), "docs", "--root", "..", "--src", ".", "--out", out, "--plugin-dir", bin)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("avenor docs: %v\n%s", err, b)
	}
	built := map[string]bool{}
	for _, p := range builtPlugins(t) {
		for _, b := range p.Backends {
			built[b.Name] = true
		}
	}
	sections := map[string][]string{}
	all, err := docgen.Sections("..", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		sections[s.Page] = append(sections[s.Page], s.Name)
	}
	err = filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(rel)
		if err != nil {
			t.Errorf("%s is missing: run make docs", rel)
			return nil
		}
		if bytes.Equal(got, want) {
			return nil
		}
		names, ok := sections[rel]
		if !ok {
			t.Errorf("%s is out of date: run make docs", rel)
			return nil
		}
		if docgen.StripGenerated(string(got)) != docgen.StripGenerated(string(want)) {
			t.Errorf("%s: hand-written text changed by the generator?", rel)
		}
		for _, name := range names {
			g, _ := docgen.SectionBody(string(got), name)
			w, _ := docgen.SectionBody(string(want), name)
			if g == w {
				continue
			}
			if !docgen.PluginSections[name] {
				t.Errorf("%s: section %s is out of date: run make docs", rel, name)
				continue
			}
			have := map[string]bool{}
			for _, l := range strings.Split(g, "\n") {
				have[l] = true
			}
			for _, l := range strings.Split(w, "\n") {
				if !have[l] {
					t.Errorf("%s: section %s lacks (or has a stale form of) the line\n  %s\nrun make docs", rel, name, l)
				}
			}
			gen := map[string]bool{}
			for _, l := range strings.Split(w, "\n") {
				gen[l] = true
			}
			for _, l := range strings.Split(g, "\n") {
				if gen[l] {
					continue
				}
				if m := backendCell.FindStringSubmatch(l); m != nil && !built[m[1]] {
					continue // a backend whose plugin is not built here
				}
				t.Errorf("%s: section %s has a line the generator no longer writes:\n  %s\nrun make docs", rel, name, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing generated may linger once its source is gone.
	for _, dir := range []string{"man", "completion"} {
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(out, dir, f.Name())); err != nil {
				t.Errorf("%s/%s is no longer generated: remove it", dir, f.Name())
			}
		}
	}
}

// documentedEvents are the event types events.md documents: each has its
// own heading (### `type`) outside the generated tables and an example line
// in an ndjson block.
func documentedEvents(t *testing.T) (headings, examples map[string]bool) {
	md := page(t, "events.md")
	headings, examples = map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(docgen.StripGenerated(md), "\n") {
		if m := regexp.MustCompile("^#{2,4} `([^`]+)`").FindStringSubmatch(line); m != nil {
			headings[m[1]] = true
		}
	}
	for _, b := range docgen.CodeBlocks(md) {
		if !docgen.IsJSONLines(b.Lang) {
			continue
		}
		for _, l := range strings.Split(b.Text, "\n") {
			var v any
			if json.Unmarshal([]byte(l), &v) == nil {
				docgen.EventTypesIn(v, examples)
			}
		}
	}
	return headings, examples
}

func checkEventDocumented(t *testing.T, typ, from string) {
	t.Helper()
	h, ex := documentedEvents(t)
	if !h[typ] {
		t.Errorf("event %s (%s) has no \"### `%s`\" section in events.md", typ, from, typ)
	}
	if !ex[typ] {
		t.Errorf("event %s (%s) has no example line in an ndjson block of events.md", typ, from)
	}
}

func TestHostEventsDocumented(t *testing.T) {
	for _, et := range event.HostEventTypes {
		checkEventDocumented(t, et.Name.String(), "host registry")
	}
}

// TestPluginEventsDocumented covers every plugin built into bin/: a built
// plugin that declares an undocumented event type fails; a plugin that is
// not built is not looked at.
func TestPluginEventsDocumented(t *testing.T) {
	ps := builtPlugins(t)
	if len(ps) == 0 {
		t.Fatal("no plugin binaries in AVENOR_TEST_BIN")
	}
	for typ, backends := range docgen.PluginEventTypes(ps) {
		checkEventDocumented(t, typ, "declared by "+strings.Join(backends, ", "))
	}
}

// TestTranscriptEventsDocumented: an event type that appears in any
// recorded transcript or golden file (testdata/ anywhere in the repository)
// is documented, so an event missing from every registry is caught too.
func TestTranscriptEventsDocumented(t *testing.T) {
	found, err := docgen.TranscriptEventTypes("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no event types found under testdata/: the scan is broken")
	}
	for typ, file := range found {
		checkEventDocumented(t, typ, "seen in "+file)
	}
}

// TestControlMethodsDocumented: every method registered on a control
// server (host/control's one-shot table, host/stable's, anything added
// later under host/ or cmd/) has a "### `method`" section, and every HTTP
// debug route is named.
func TestControlMethodsDocumented(t *testing.T) {
	md := page(t, "control-protocol.md")
	methods, err := docgen.RegisteredMethods("../host", "../cmd")
	if err != nil {
		t.Fatal(err)
	}
	if len(methods) < 10 {
		t.Fatalf("found only %d registered methods: the scan is broken", len(methods))
	}
	for m, where := range methods {
		if !strings.Contains(md, "### `"+m+"`") {
			t.Errorf("control method %s (%s) has no \"### `%s`\" section in control-protocol.md", m, where, m)
		}
	}
	routes, err := docgen.StringLiterals("../host/control/httpdebug", regexp.MustCompile(`^/[a-z][a-z-]*/?$`))
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) == 0 {
		t.Fatal("no HTTP debug routes found: the scan is broken")
	}
	for _, r := range routes {
		if !strings.Contains(md, " "+strings.TrimSuffix(r, "/")) {
			t.Errorf("HTTP debug route %s is not in control-protocol.md", r)
		}
	}
}

// TestExampleJSONParses: every json block parses as one value, every line
// of an ndjson/jsonl block as one value each.
func TestExampleJSONParses(t *testing.T) {
	n := 0
	for name, md := range pages(t) {
		for _, b := range docgen.CodeBlocks(md) {
			switch {
			case b.Lang == "json":
				n++
				if !json.Valid([]byte(b.Text)) {
					t.Errorf("%s:%d: json block does not parse", name, b.Line)
				}
			case docgen.IsJSONLines(b.Lang):
				for i, l := range strings.Split(b.Text, "\n") {
					if strings.TrimSpace(l) == "" {
						continue
					}
					n++
					if !json.Valid([]byte(l)) {
						t.Errorf("%s:%d: line does not parse as JSON: %s", name, b.Line+1+i, l)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no JSON examples found")
	}
}

// TestConfigKeysDocumented: every key, its environment variable and flag
// are in configuration.md.
func TestConfigKeysDocumented(t *testing.T) {
	md := page(t, "configuration.md")
	for _, k := range config.Keys() {
		for _, s := range []string{k.Key, k.Env, k.Flag} {
			if s != "" && !strings.Contains(md, "`"+s+"`") {
				t.Errorf("config key %s: %s is not in configuration.md", k.Key, s)
			}
		}
	}
}

// TestLinks: every relative link between pages points at a file that exists.
func TestLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	var missing []string
	for name, md := range pages(t) {
		for _, m := range link.FindAllStringSubmatch(md, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(name), target)); err != nil {
				missing = append(missing, name+" → "+target)
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("broken link %s", m)
	}
}
