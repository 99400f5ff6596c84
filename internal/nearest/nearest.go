package nearest

import "strings"

// Distance is the optimal-string-alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of neighbours
// ("ecoh" is one edit from "echo").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Name is the candidate closest to typed, when it is close enough to be
// a typo: one edit for a short word, two for a longer one, or typed is a
// prefix of it. Ties go to the first in candidates' order.
func Name(typed string, candidates []string) (string, bool) {
	typed = strings.ToLower(typed)
	limit := 1
	if len([]rune(typed)) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		dist := Distance(typed, strings.ToLower(c))
		if dist < bestD && dist > 0 {
			best, bestD = c, dist
		}
	}
	if best == "" && len(typed) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, typed) && c != typed {
				return c, true
			}
		}
	}
	return best, best != ""
}
