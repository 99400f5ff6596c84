package watch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzResume reads any log bytes once, and again in two watches that the
// cursor joins (the log grows between them at any byte, also inside a line
// or an over-long line): the second way prints exactly what the first did,
// counts the same events, malformed and over-long lines, and both leave the
// cursor just past the last complete line, never inside one. This is
// `avenor watch --cursor` over a log still being written.
func FuzzResume(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.ndjson"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint16(len(data)/2), uint8(0))
	}
	f.Add([]byte(evLine("tool.call", `,"title":"`+string(bytes.Repeat([]byte("x"), 200))+`"`)+evLine("session.end", "")), uint16(40), uint8(32))
	f.Add([]byte("not json\n\n  \r\n{\"event\":\"\"}\n{\"event\":\"a\"}\r\n{\"event\":\"b\""), uint16(9), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, split uint16, maxLine uint8) {
		k := int(split) % (len(data) + 1)
		cfg := Config{MaxLineBytes: 16 + int(maxLine)}
		if split%2 == 1 {
			cfg.Printer = Printer{Format: JSON}
		}
		dir := t.TempDir()
		whole := filepath.Join(dir, "whole.ndjson")
		if err := os.WriteFile(whole, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var once bytes.Buffer
		r1, err := Run(context.Background(), whole, &once, cfg)
		if err != nil {
			t.Fatalf("one pass: %v", err)
		}
		wantOff := int64(bytes.LastIndexByte(data, '\n') + 1)
		if r1.Offset != wantOff {
			t.Fatalf("one pass ends at offset %d, want %d (just past the last newline)", r1.Offset, wantOff)
		}

		grown := filepath.Join(dir, "grown.ndjson")
		cfg.CursorPath = filepath.Join(dir, "cursor")
		if err := os.WriteFile(grown, data[:k], 0o644); err != nil {
			t.Fatal(err)
		}
		var twice bytes.Buffer
		ra, err := Run(context.Background(), grown, &twice, cfg)
		if err != nil {
			t.Fatalf("first part: %v", err)
		}
		if want := int64(bytes.LastIndexByte(data[:k], '\n') + 1); ra.Offset != want {
			t.Fatalf("first part ends at offset %d, want %d", ra.Offset, want)
		}
		appendFile(t, grown, string(data[k:]))
		rb, err := Run(context.Background(), grown, &twice, cfg)
		if err != nil {
			t.Fatalf("second part: %v", err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatalf("resumed at %d, the output differs:\n one pass %q\n resumed  %q", k, once.Bytes(), twice.Bytes())
		}
		if ra.Events+rb.Events != r1.Events || ra.Malformed+rb.Malformed != r1.Malformed || ra.TooLong+rb.TooLong != r1.TooLong {
			t.Fatalf("counts: one pass %+v, resumed %+v + %+v", r1, ra, rb)
		}
		if off, ok, err := ReadCursor(cfg.CursorPath); err != nil || !ok || off != r1.Offset {
			t.Fatalf("cursor = %d %v %v, want %d", off, ok, err, r1.Offset)
		}
	})
}

// FuzzReadCursor: any cursor file content reads as a non-negative offset or
// fails with ErrBadCursor; a written cursor reads back.
func FuzzReadCursor(f *testing.F) {
	for _, s := range []string{"0\n", "123\n", " 7 \r\n", "-1\n", "9223372036854775808\n", "", "abc", "1e3", "+5"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "cursor")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		off, ok, err := ReadCursor(path)
		if err != nil {
			if ok || off != 0 {
				t.Fatalf("an error with offset %d, ok %v", off, ok)
			}
			return
		}
		if !ok || off < 0 {
			t.Fatalf("offset %d, ok %v", off, ok)
		}
		if err := WriteCursor(path, off); err != nil {
			t.Fatal(err)
		}
		if back, _, err := ReadCursor(path); err != nil || back != off {
			t.Fatalf("wrote %d, read %d %v", off, back, err)
		}
	})
}
