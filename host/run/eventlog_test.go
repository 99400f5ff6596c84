package run

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestEventLogParks: a parked log holds no file open, a write while parked
// appends and closes again, a new run keeps it open; the bytes are exactly
// those written, in order. A FIFO stays open (its reader would see EOF).
func TestEventLogParks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.ndjson")
	l, err := createEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(s string) {
		t.Helper()
		if n, err := l.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	open := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.f != nil
	}
	write("1\n")
	if err := l.park(); err != nil || open() {
		t.Fatalf("parked: err %v, open %v", err, open())
	}
	write("2\n")
	if open() {
		t.Fatal("a write while parked left the file open")
	}
	l.unpark()
	write("3\n")
	write("4\n")
	if !open() {
		t.Fatal("a running runtime's log closed between writes")
	}
	if err := l.park(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "1\n2\n3\n4\n" {
		t.Fatalf("log holds %q", b)
	}
	// A log removed while parked is an error, not a new file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("5\n")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("write to a removed log: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the write recreated the removed log")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write([]byte("6\n")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}

	// A log that is not a regular file (of those taken, only /dev/null) is
	// kept open while parked: reopening a device gains nothing.
	fl, err := createEventLog(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if err := fl.park(); err != nil {
		t.Fatal(err)
	}
	fl.mu.Lock()
	kept := fl.f != nil
	fl.mu.Unlock()
	if !kept {
		t.Fatal("a parked /dev/null log was closed")
	}
}
