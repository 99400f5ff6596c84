package liveview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteRuntimeTable prints a supervisor's list answer (a JSON array of
// runtime entries, docs/control-protocol.md#spawn) as a table for a person: id, label,
// backend, status, phase, age, tokens and the pending permission. now is
// the clock for the age. The JSON shape itself is `avenor control list
// --json`'s, unchanged.
func WriteRuntimeTable(w io.Writer, raw json.RawMessage, now time.Time) error {
	var entries []map[string]any
	if err := json.Unmarshal(raw, &entries); err != nil {
		return fmt.Errorf("the list answer is not an array of runtimes: %w", err)
	}
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "no runtimes")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLABEL\tBACKEND\tSTATUS\tPHASE\tAGE\tTOKENS\tPERMISSION")
	for _, e := range entries {
		ev := map[string]any(e)
		label := firstNonEmpty(str(ev, "label"), str(ev, "run_label"))
		phase := str(ev, "phase")
		if l := str(ev, "phase_label"); l != "" {
			phase += ": " + l
		}
		age := "-"
		if ms, ok := ev["started_at"].(float64); ok && ms > 0 {
			age = formatDuration(now.Sub(time.UnixMilli(int64(ms))).Round(time.Second))
		}
		tokens := "-"
		if u, ok := ev["usage"].(map[string]any); ok {
			if t := tokenCount(u); t != "" {
				tokens = t
			}
		}
		perm := "-"
		if p, _ := ev["pending_permission"].(bool); p {
			perm = "pending"
			if pm, ok := ev["permission"].(map[string]any); ok {
				if what := firstNonEmpty(str(pm, "question"), str(pm, "tool")); what != "" {
					perm = "pending: " + what
				}
			}
		}
		cells := []string{str(ev, "runtime_id"), label, str(ev, "backend"), str(ev, "status"), phase, age, tokens, perm}
		for i, c := range cells {
			if c == "" {
				c = "-"
			}
			cells[i] = sanitizeLine(c, 48)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// tokenCount is a usage's total tokens (or input + output), "" if none.
func tokenCount(u map[string]any) string {
	if t, ok := u["total_tokens"].(float64); ok && t > 0 {
		return anyNum(t)
	}
	in, _ := u["input_tokens"].(float64)
	out, _ := u["output_tokens"].(float64)
	if in+out > 0 {
		return anyNum(in + out)
	}
	return ""
}
