package docgen

import (
	"go/parser"
	"strings"
	"testing"
)

func TestSplice(t *testing.T) {
	page := "intro\n<!-- BEGIN GENERATED x (make docs; do not edit) -->\nold\n<!-- END GENERATED x -->\noutro\n"
	got, err := Splice(page, "x", "new")
	if err != nil {
		t.Fatal(err)
	}
	want := "intro\n<!-- BEGIN GENERATED x (make docs; do not edit) -->\nnew\n<!-- END GENERATED x -->\noutro\n"
	if got != want {
		t.Errorf("Splice:\n%s\nwant:\n%s", got, want)
	}
	if body, ok := SectionBody(got, "x"); !ok || body != "new\n" {
		t.Errorf("SectionBody = %q, %v", body, ok)
	}
	if StripGenerated(got) != strings.Replace(got, "new\n", "", 1) {
		t.Errorf("StripGenerated kept the body:\n%s", StripGenerated(got))
	}
	if _, err := Splice("no markers", "x", "new"); err == nil {
		t.Error("Splice without markers: no error")
	}
}

func TestEvalConst(t *testing.T) {
	for _, tc := range []struct{ name, expr, want string }{
		{"MaxRequestLine", "4 << 20", "4 MiB"},
		{"MaxMessageBytes", "64 << 10", "64 KiB"},
		{"DefaultTimeout", "10 * time.Minute", "10m0s"},
		{"DefaultPollInterval", "500 * time.Millisecond", "500ms"},
		{"DefaultQueue", "256", "256"},
	} {
		e, err := parser.ParseExpr(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := evalConst(e, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := v.String(tc.name); got != tc.want {
			t.Errorf("%s = %s, want %s", tc.expr, got, tc.want)
		}
	}
}

func TestCodeBlocks(t *testing.T) {
	md := "a\n```ndjson\n{\"event\":\"x.y\"}\n```\nb\n```json\n{}\n```\n"
	bs := CodeBlocks(md)
	if len(bs) != 2 || bs[0].Lang != "ndjson" || bs[0].Text != `{"event":"x.y"}` || bs[1].Lang != "json" {
		t.Fatalf("CodeBlocks = %+v", bs)
	}
}

func TestBoundsResolve(t *testing.T) {
	if _, err := BoundsTable("../.."); err != nil {
		t.Fatal(err)
	}
}
