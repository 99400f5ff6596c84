package agentproc

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// token is one result of LineReader.Next: a line, or the size of a discarded
// one.
type token struct {
	line    string
	tooLong int64 // > 0: a *LineTooLongError of this size
}

func readAll(t testing.TB, lr *LineReader) ([]token, error) {
	t.Helper()
	var got []token
	for {
		line, err := lr.Next()
		var tl *LineTooLongError
		switch {
		case err == nil:
			got = append(got, token{line: string(line)})
		case errors.As(err, &tl):
			if !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("%v does not match ErrLineTooLong", err)
			}
			got = append(got, token{tooLong: tl.Size})
		case errors.Is(err, io.EOF):
			return got, nil
		default:
			return got, err
		}
	}
}

func TestLineReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		max   int
		want  []token
	}{
		{"empty input", "", 8, nil},
		{"lines", "a\nbb\n\nccc\n", 8, []token{{line: "a"}, {line: "bb"}, {line: ""}, {line: "ccc"}}},
		{"crlf", "a\r\nb\r\n", 8, []token{{line: "a"}, {line: "b"}}},
		{"inner cr kept", "a\rb\n", 8, []token{{line: "a\rb"}}},
		{"only one trailing cr stripped", "a\r\r\n", 8, []token{{line: "a\r"}}},
		{"final line without newline", "a\nb", 8, []token{{line: "a"}, {line: "b"}}},
		{"final line with cr", "a\r", 8, []token{{line: "a"}}},
		{"exactly at limit", "abcd\nef\n", 4, []token{{line: "abcd"}, {line: "ef"}}},
		{"at limit with crlf", "abcd\r\nef\n", 4, []token{{line: "abcd"}, {line: "ef"}}},
		{"limit+1", "abcde\nok\n", 4, []token{{tooLong: 5}, {line: "ok"}}},
		{"limit+1 with crlf", "abcde\r\nok\n", 4, []token{{tooLong: 5}, {line: "ok"}}},
		{"limit+1 unterminated", "ok\nabcde", 4, []token{{line: "ok"}, {tooLong: 5}}},
		{"several long lines", strings.Repeat("x", 100) + "\n" + strings.Repeat("y", 50) + "\nok\n", 10,
			[]token{{tooLong: 100}, {tooLong: 50}, {line: "ok"}}},
		{"line spanning chunks", strings.Repeat("z", 100) + "\nok", 200,
			[]token{{line: strings.Repeat("z", 100)}, {line: "ok"}}},
	}
	readers := []struct {
		name  string
		chunk int
		wrap  func(io.Reader) io.Reader
	}{
		{"default chunk", lineChunkBytes, func(r io.Reader) io.Reader { return r }},
		{"16-byte chunk", 16, func(r io.Reader) io.Reader { return r }},
		{"one byte reads", 16, iotest.OneByteReader},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				lr := newLineReaderSize(rd.wrap(strings.NewReader(tt.input)), tt.max, rd.chunk)
				got, err := readAll(t, lr)
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !equalTokens(got, tt.want) {
					t.Fatalf("got %+v, want %+v", got, tt.want)
				}
				if _, err := lr.Next(); err != io.EOF {
					t.Fatalf("Next after EOF = %v, want io.EOF", err)
				}
			})
		}
	}
}

func TestLineReaderReadErrorIsSticky(t *testing.T) {
	boom := errors.New("boom")
	lr := NewLineReader(io.MultiReader(strings.NewReader("ok\npartial"), iotest.ErrReader(boom)), 8)
	if line, err := lr.Next(); err != nil || string(line) != "ok" {
		t.Fatalf("Next = %q, %v; want ok", line, err)
	}
	for range 2 {
		if _, err := lr.Next(); !errors.Is(err, boom) {
			t.Fatalf("Next = %v, want %v", err, boom)
		}
	}
}

// repeatReader yields n copies of b without holding them in memory.
type repeatReader struct {
	b byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = r.b
	}
	r.n -= int64(len(p))
	return len(p), nil
}

func TestLineReaderHugeLineBoundedMemory(t *testing.T) {
	const huge = 100_000_000
	tests := []struct {
		name     string
		max      int
		maxAlloc uint64
	}{
		// The line buffer grows by doubling up to max+1, so about 2*max is
		// allocated in total before the line is known to be too long.
		{"1 MiB limit", 1 << 20, 32 << 20},
		{"default limit", DefaultMaxLineBytes, 2*DefaultMaxLineBytes + 4<<20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := io.MultiReader(&repeatReader{b: 'a', n: huge}, strings.NewReader("\r\nok\nfine"))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)

			got, err := readAll(t, NewLineReader(src, tt.max))

			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			want := []token{{tooLong: huge}, {line: "ok"}, {line: "fine"}}
			if !equalTokens(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB in total for a %d MB line", alloc>>20, huge/1_000_000)
			if alloc > tt.maxAlloc {
				t.Fatalf("allocated %d bytes, want at most %d", alloc, tt.maxAlloc)
			}
		})
	}
}

// FuzzLineReader checks LineReader against a naive model: split on '\n',
// drop the empty piece after a final '\n', strip one '\r', classify by length.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), uint8(2), false)
	f.Add([]byte("abcd\r\nabcde\r\n"), uint8(4), true)
	f.Add([]byte(strings.Repeat("x", 40)+"\n\r"), uint8(16), true)
	f.Add([]byte("\r"), uint8(0), false)
	f.Fuzz(func(t *testing.T, data []byte, max uint8, smallChunk bool) {
		limit := int(max%32) + 1
		chunk := lineChunkBytes
		if smallChunk {
			chunk = 16
		}
		lr := newLineReaderSize(iotest.HalfReader(bytes.NewReader(data)), limit, chunk)
		var got []token
		for {
			line, err := lr.Next()
			if len(line) > limit {
				t.Fatalf("line of %d bytes with limit %d", len(line), limit)
			}
			var tl *LineTooLongError
			if errors.As(err, &tl) {
				got = append(got, token{tooLong: tl.Size})
				continue
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			got = append(got, token{line: string(line)})
		}

		var want []token
		pieces := bytes.Split(data, []byte("\n"))
		if len(pieces[len(pieces)-1]) == 0 {
			pieces = pieces[:len(pieces)-1]
		}
		for _, p := range pieces {
			p = bytes.TrimSuffix(p, []byte("\r"))
			if len(p) > limit {
				want = append(want, token{tooLong: int64(len(p))})
			} else {
				want = append(want, token{line: string(p)})
			}
		}
		if !equalTokens(got, want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})
}

func equalTokens(a, b []token) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
