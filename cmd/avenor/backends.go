package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// BackendsWidth is the width the default `avenor backends` table fits
// (-o wide and --json show everything).
const BackendsWidth = 100

func newBackendsCmd(env Env) *cobra.Command {
	var asJSON bool
	var output string
	cmd := &cobra.Command{
		Use:     "backends",
		Short:   "List installed backends with their capabilities and readiness",
		Long:    fmt.Sprintf(help("backends"), BackendsWidth),
		Example: "  avenor backends\n  avenor backends -o wide\n  avenor backends --json | jq -r '.[] | select(.ready) | .backend'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "wide" {
				return usageError{fmt.Errorf("-o %q: want wide (or --json)", output)}
			}
			// As run resolves them: this project's pins and the config's
			// [backends.<name>] plugin decide which binary serves a backend.
			resolved, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
			if err != nil {
				return err
			}
			rows := hostrun.ListBackends(cmd.Context(), resolved.Finder)
			switch {
			case asJSON:
				return writeJSON(env.Stdout, rows)
			case output == "wide":
				hostrun.WriteBackendsTable(env.Stdout, rows)
				writeBackendsLegend(env.Stdout)
			default:
				writeBackendsNarrow(env.Stdout, rows)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide: every capability and the whole readiness message")
	return cmd
}

// writeBackendsLegend explains the capability cells.
func writeBackendsLegend(out io.Writer) {
	fmt.Fprintln(out, "\nyes: supported · exp: experimental · ?: declared, unverified against the runtime · -: not offered")
	fmt.Fprintln(out, "*: resumes within one avenor process only · -o wide: every capability, whole messages · --json: all")
}

// writeBackendsNarrow is the default table: what tells backends apart, in
// BackendsWidth columns.
func writeBackendsNarrow(out io.Writer, rows []hostrun.BackendRow) {
	if len(rows) == 0 {
		hostrun.WriteBackendsTable(out, rows)
		return
	}
	table := [][]string{{"BACKEND", "PLUGIN", "RESUME", "PERMS", "MODEL", "THINKING", "READY"}}
	for _, r := range rows {
		if r.Error != "" {
			table = append(table, []string{"?", r.Plugin, "", "", "", "", "error: " + r.Error})
			continue
		}
		resume := hostrun.CapMark(r.Capabilities[sdk.CapResume])
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
			hostrun.CapMark(r.Capabilities[sdk.CapPermissionRelay]), hostrun.CapMark(r.Capabilities[sdk.CapModelSelection]),
			levelsRange(r.ThinkingLevels), ready})
	}
	widths := make([]int, len(table[0]))
	for _, row := range table {
		for i, c := range row[:len(row)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	room := BackendsWidth
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
	writeBackendsLegend(out)
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
