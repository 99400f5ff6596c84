package jsonenc

// ScanNumber checks the JSON number grammar at b[i] (a '-' or a digit
// there) and returns the index after the number; integer reports that it
// has neither a fraction nor an exponent; ok is false when the grammar is
// broken. It is the number rule the host's scanner and the plugin's
// decoder share.
func ScanNumber(b []byte, i int) (end int, integer, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false, false
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		integer = false
		if i = digits(b, i+1); i < 0 {
			return 0, false, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i = digits(b, i); i < 0 {
			return 0, false, false
		}
	}
	return i, integer, true
}

// digits is the index after the run of one or more digits at b[i]; -1
// when there is none.
func digits(b []byte, i int) int {
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
