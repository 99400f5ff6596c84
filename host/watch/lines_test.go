package watch

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// growing is a file that tests append to.
type growing struct{ data []byte }

func (g *growing) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(g.data)) {
		return 0, io.EOF
	}
	n := copy(p, g.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// drain reads lines until io.EOF, as "line@offset" items.
func drain(t *testing.T, lr *lineReader) []string {
	t.Helper()
	var got []string
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s@%d", line, lr.Offset()))
	}
}

func TestLineReader(t *testing.T) {
	for _, chunk := range []int{1, 3, 7, readChunk} {
		t.Run(fmt.Sprintf("chunk %d", chunk), func(t *testing.T) {
			g := &growing{}
			var skips []string
			lr := newLineReader(g, 0, 8, func(off, n int64) { skips = append(skips, fmt.Sprintf("%d+%d", off, n)) })
			lr.chunk = make([]byte, chunk)

			g.data = append(g.data, "one\ntwo\r\nthr"...)
			if got, want := strings.Join(drain(t, lr), " "), "one@4 two@9"; got != want {
				t.Fatalf("lines = %q, want %q", got, want)
			}
			if lr.Offset() != 9 {
				t.Fatalf("a partial line moved the offset to %d", lr.Offset())
			}
			g.data = append(g.data, "ee\n\n0123456789abc"...) // a blank line, then an over-long one streaming in
			if got, want := strings.Join(drain(t, lr), " "), "three@15 @16"; got != want {
				t.Fatalf("lines = %q, want %q", got, want)
			}
			if lr.Offset() != 16 {
				t.Fatalf("offset %d points inside the over-long line", lr.Offset())
			}
			g.data = append(g.data, "def\nlong-complete-line\nok\n"...)
			if got, want := strings.Join(drain(t, lr), " "), "ok@55"; got != want {
				t.Fatalf("lines = %q, want %q", got, want)
			}
			if got, want := strings.Join(skips, " "), "16+16 33+18"; got != want {
				t.Errorf("skips = %q, want %q", got, want)
			}
		})
	}
}

func TestLineReaderStartsAtOffset(t *testing.T) {
	g := &growing{data: []byte("aa\nbb\ncc\n")}
	lr := newLineReader(g, 3, 100, nil)
	if got, want := strings.Join(drain(t, lr), " "), "bb@6 cc@9"; got != want {
		t.Errorf("lines = %q, want %q", got, want)
	}
}
