package config

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// WriteText prints r for a person (`avenor config show`): the files read
// or not found, then one line a setting with its value and source.
func (r Report) WriteText(w io.Writer) {
	found := "not found"
	if r.UserFound {
		found = "read"
	}
	fmt.Fprintf(w, "user file:    %s (%s)\n", r.UserFile, found)
	if r.ProjectFile != "" {
		pf := "not found"
		if _, err := os.Stat(r.ProjectFile); err == nil {
			pf = "read"
		}
		fmt.Fprintf(w, "project file: %s (%s)\n", r.ProjectFile, pf)
	} else {
		fmt.Fprintln(w, "project file: none (no .avenor/ directory here or above)")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tSOURCE")
	for _, e := range r.Settings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Key, FormatValue(e.Value), e.Source)
	}
	_ = tw.Flush()
}
