package occonfig

// StripJSONC turns OpenCode's JSONC (comments and trailing commas allowed)
// into JSON: // and /* */ comments outside strings become spaces, and a
// comma followed only by whitespace before } or ] is dropped.
func StripJSONC(in []byte) []byte {
	out := make([]byte, 0, len(in))
	var str stringState
	for i := 0; i < len(in); i++ {
		c := in[i]
		if str.inside(c) {
			out = append(out, c)
			continue
		}
		switch {
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
			out = append(out, '\n')
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			i += 2
			for i+1 < len(in) && !(in[i] == '*' && in[i+1] == '/') {
				i++
			}
			i++
			out = append(out, ' ')
		default:
			out = append(out, c)
		}
	}
	return dropTrailingCommas(out)
}

// dropTrailingCommas removes commas that only whitespace separates from a
// closing bracket, once comments are gone.
func dropTrailingCommas(in []byte) []byte {
	out := make([]byte, 0, len(in))
	var str stringState
	for i := 0; i < len(in); i++ {
		c := in[i]
		if str.inside(c) {
			out = append(out, c)
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(in) && isSpace(in[j]) {
				j++
			}
			if j < len(in) && (in[j] == '}' || in[j] == ']') {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringState follows JSON text byte by byte to tell a string's bytes
// from the rest, for both passes.
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
