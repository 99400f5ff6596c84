package ochttp

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(in string) ([]string, int, error) {
	r := newSSEReader(strings.NewReader(in))
	var out []string
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.dropped, nil
		}
		if err != nil {
			return out, r.dropped, err
		}
		out = append(out, string(d))
	}
}

func TestSSEReader(t *testing.T) {
	long := strings.Repeat("x", maxSSELineBytes+10)
	cases := []struct {
		name, in string
		want     []string
		dropped  int
	}{
		{name: "one event", in: "data: {\"a\":1}\n\n", want: []string{`{"a":1}`}},
		{name: "crlf and no space", in: "data:x\r\n\r\n", want: []string{"x"}},
		{name: "multi-line data", in: "data: a\ndata: b\n\n", want: []string{"a\nb"}},
		{name: "comments and other fields", in: ": hi\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", want: []string{"x"}},
		{name: "blank lines alone", in: "\n\n\ndata: x\n\n", want: []string{"x"}},
		{name: "unterminated event dropped", in: "data: x\n\ndata: y\n", want: []string{"x"}},
		{name: "over-long line skips its event", in: "data: " + long + "\ndata: tail\n\ndata: ok\n\n", want: []string{"ok"}, dropped: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, dropped, err := readAll(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") || dropped != c.dropped {
				t.Errorf("got %q dropped %d, want %q dropped %d", got, dropped, c.want, c.dropped)
			}
		})
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{"data: {\"type\":\"x\"}\n\n", "data:a\r\ndata:b\r\n\r\n", ": c\n\nevent: e\n", "data", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, _, err := readAll(in)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, g := range got {
			total += len(g)
		}
		if total > len(in) {
			t.Fatalf("%d bytes of data out of %d in", total, len(in))
		}
	})
}
