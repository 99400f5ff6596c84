package plugintest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// Status is the outcome of one check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one behaviour checked.
type Result struct {
	// Name is the check's path, the same as its subtest's under Run:
	// "handshake/describe_names_the_plugin_and_its_version",
	// "echo/session/cancel_ends_the_turn_promptly".
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail says what went wrong, or why the check was skipped.
	Detail string `json:"detail,omitempty"`
}

// Report is what VerifyBinary found.
type Report struct {
	Target  string      // the binary, or "in-process"
	Plugin  plugin.Info // as Describe named it
	Results []Result
}

// MarshalJSON encodes the report for `avenor plugin verify --json`:
// {"target", "plugin": {"name", "version"}, "results": [...]}.
func (r Report) MarshalJSON() ([]byte, error) {
	type info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	results := r.Results
	if results == nil {
		results = []Result{}
	}
	return json.Marshal(struct {
		Target  string   `json:"target"`
		Plugin  info     `json:"plugin"`
		Results []Result `json:"results"`
	}{r.Target, info{r.Plugin.Name, r.Plugin.Version}, results})
}

// Failed lists the failed checks.
func (r Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Status == Fail {
			out = append(out, res)
		}
	}
	return out
}

// Count returns how many checks ended with status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// ErrNonConformant is wrapped by Report.Err when a check failed.
var ErrNonConformant = errors.New("plugin does not conform")

// Err is nil when no check failed; otherwise it names every failed
// behaviour and what went wrong.
func (r Report) Err() error {
	failed := r.Failed()
	if len(failed) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d checks failed", r.Target, len(failed), len(r.Results))
	for _, f := range failed {
		fmt.Fprintf(&b, "\n  %s: %s", f.Name, f.Detail)
	}
	return fmt.Errorf("%w: %s", ErrNonConformant, b.String())
}

// WriteText writes the pass/fail list, one check a line, then a summary.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "verify %s (%s %s)\n", r.Target, r.Plugin.Name, r.Plugin.Version)
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-4s  %s", strings.ToUpper(string(res.Status)), res.Name)
		if res.Detail != "" {
			fmt.Fprintf(&b, ": %s", res.Detail)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d passed, %d failed, %d skipped\n", r.Count(Pass), r.Count(Fail), r.Count(Skip))
	_, err := io.WriteString(w, b.String())
	return err
}
