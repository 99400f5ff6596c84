package jsonenc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestScanNumber(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		at, end     int
		integer, ok bool
	}{
		{name: "zero", in: "0", end: 1, integer: true, ok: true},
		{name: "negative integer", in: "-120,", end: 4, integer: true, ok: true},
		{name: "ends at the first non-digit", in: "42}", end: 2, integer: true, ok: true},
		{name: "leading zero ends the number", in: "012", end: 1, integer: true, ok: true},
		{name: "fraction", in: "3.25]", end: 4, ok: true},
		{name: "exponent", in: "1e9", end: 3, ok: true},
		{name: "signed exponent after a fraction", in: "-0.5E-07 ", end: 8, ok: true},
		{name: "from an offset", in: `{"n":17}`, at: 5, end: 7, integer: true, ok: true},
		{name: "lone minus", in: "-"},
		{name: "minus then a letter", in: "-x"},
		{name: "fraction without digits", in: "1."},
		{name: "fraction without digits before an exponent", in: "1.e5"},
		{name: "exponent without digits", in: "1e"},
		{name: "signed exponent without digits", in: "1e+"},
		{name: "plus sign", in: "+1"},
		{name: "leading dot", in: ".5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end, integer, ok := ScanNumber([]byte(tc.in), tc.at)
			if ok != tc.ok || (ok && (end != tc.end || integer != tc.integer)) {
				t.Errorf("ScanNumber(%q, %d) = %d, %v, %v; want %d, %v, %v", tc.in, tc.at, end, integer, ok, tc.end, tc.integer, tc.ok)
			}
		})
	}
}

// FuzzScanNumber holds ScanNumber to encoding/json: a whole input it reads
// as one number is valid JSON, and valid JSON that starts a number is read
// to its end.
func FuzzScanNumber(f *testing.F) {
	for _, s := range []string{"0", "-1", "1.5e+3", "01", "1.", "-", "1e", "12345678901234567890"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimRight(b, " \t\r\n") // JSON's whitespace after a value
		if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
			return
		}
		end, _, ok := ScanNumber(b, 0)
		whole := ok && end == len(b)
		if valid := json.Valid(b); whole != valid {
			t.Errorf("%q: ScanNumber reads it whole: %v (end %d, ok %v); json.Valid: %v", b, whole, end, ok, valid)
		}
	})
}
