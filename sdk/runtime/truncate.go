package runtime

import "unicode/utf8"

// Truncate bounds s to at most n bytes for titles, previews and input quoted
// in events and errors, marking a cut with "…". It cuts at a rune boundary,
// so a bounded string is still valid UTF-8 (a byte cut would leave half a
// character, which JSON then turns into U+FFFD).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
