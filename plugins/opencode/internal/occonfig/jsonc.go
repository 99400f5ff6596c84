package occonfig

// StripJSONC turns OpenCode's JSONC (comments and trailing commas allowed)
// into JSON: // and /* */ comments outside strings become spaces, and a
// comma followed only by whitespace before } or ] is dropped.
func StripJSONC(in []byte) []byte {
	return outsideStrings(outsideStrings(in, stripComment), dropTrailingComma)
}

// outsideStrings is the copy of in in which step has rewritten what stands
// outside JSON strings: step gets each such byte in[i], appends what stands
// for it to out and returns out and the index of the last byte it used.
// The bytes of strings, quotes included, are copied as they are.
func outsideStrings(in []byte, step func(out, in []byte, i int) ([]byte, int)) []byte {
	out := make([]byte, 0, len(in))
	var str stringState
	for i := 0; i < len(in); i++ {
		if str.inside(in[i]) {
			out = append(out, in[i])
			continue
		}
		out, i = step(out, in, i)
	}
	return out
}

// stripComment turns a // comment at in[i] into the newline that ends it
// and a /* */ comment into a space.
func stripComment(out, in []byte, i int) ([]byte, int) {
	switch {
	case in[i] == '/' && i+1 < len(in) && in[i+1] == '/':
		for i < len(in) && in[i] != '\n' {
			i++
		}
		return append(out, '\n'), i
	case in[i] == '/' && i+1 < len(in) && in[i+1] == '*':
		i += 2
		for i+1 < len(in) && !(in[i] == '*' && in[i+1] == '/') {
			i++
		}
		return append(out, ' '), i + 1
	}
	return append(out, in[i]), i
}

// dropTrailingComma drops a comma at in[i] that only whitespace separates
// from a closing bracket, once comments are gone.
func dropTrailingComma(out, in []byte, i int) ([]byte, int) {
	if in[i] == ',' {
		j := i + 1
		for j < len(in) && isSpace(in[j]) {
			j++
		}
		if j < len(in) && (in[j] == '}' || in[j] == ']') {
			return out, i
		}
	}
	return append(out, in[i]), i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringState follows JSON text byte by byte to tell a string's bytes
// from the rest.
type stringState struct{ in, escaped bool }

// inside reports whether c belongs to a string, its quotes included.
func (s *stringState) inside(c byte) bool {
	switch {
	case !s.in:
		s.in = c == '"'
		return s.in
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
	}
	return true
}
