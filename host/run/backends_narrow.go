package run

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// WriteBackendsLegend explains the capability cells.
func WriteBackendsLegend(out io.Writer) {
	fmt.Fprintln(out, "\nyes: supported · exp: experimental · ?: declared, unverified against the runtime · -: not offered")
	fmt.Fprintln(out, "*: resumes within one avenor process only · -o wide: every capability, whole messages · --json: all")
}

// WriteBackendsNarrow is the default table: what tells backends apart, in
// width columns (`avenor backends`: cmd/avenor's BackendsWidth).
func WriteBackendsNarrow(out io.Writer, rows []BackendRow, width int) {
	if len(rows) == 0 {
		WriteBackendsTable(out, rows)
		return
	}
	table := [][]string{{"BACKEND", "PLUGIN", "RESUME", "PERMS", "MODEL", "THINKING", "READY"}}
	for _, r := range rows {
		if r.Error != "" {
			table = append(table, []string{"?", r.Plugin, "", "", "", "", "error: " + r.Error})
			continue
		}
		resume := CapMark(r.Capabilities[sdk.CapResume])
		if r.ResumeScope == sdk.ResumeInProcess && resume != "-" {
			resume += "*"
		}
		ready := "yes"
		switch {
		case !r.Ready:
			ready = "no: " + shortReason(r.Backend, r.Message)
		case r.RuntimeVersion != "":
			ready = "yes (" + r.RuntimeVersion + ")"
		}
		table = append(table, []string{r.Backend, r.Plugin + " " + r.PluginVersion, resume,
			CapMark(r.Capabilities[sdk.CapPermissionRelay]), CapMark(r.Capabilities[sdk.CapModelSelection]),
			levelsRange(r.ThinkingLevels), ready})
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, c := range row[:len(row)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	room := width
	for _, w := range widths[:len(widths)-1] {
		room -= w + 2
	}
	for _, row := range table {
		var b strings.Builder
		for i, c := range row[:len(row)-1] {
			b.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteString(clipRunes(row[len(row)-1], room))
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	WriteBackendsLegend(out)
}

// levelsRange is a backend's thinking levels as their first and last.
func levelsRange(levels []string) string {
	switch len(levels) {
	case 0:
		return "-"
	case 1:
		return levels[0]
	}
	return levels[0] + "…" + levels[len(levels)-1]
}

// shortReason is the first clause of a readiness message, without the
// backend's name in front (-o wide has the whole message).
func shortReason(backend, msg string) string {
	msg = strings.TrimPrefix(msg, backend+": ")
	msg = strings.Replace(strings.Replace(msg, "the runtime CLI ", "", 1), " was not found in PATH", " not in PATH", 1)
	if i := strings.IndexAny(msg, ";("); i > 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	return msg
}

// clipRunes cuts s to n runes, the last an ellipsis when it was longer.
func clipRunes(s string, n int) string {
	if n < 1 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
