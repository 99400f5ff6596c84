package loop

import (
	"errors"
	"fmt"
	"io"
)

// Check refuses a request with nothing to check, or a roster entry
// without its roster; the errors name the flags of `avenor verify`.
func (r VerifyRequest) Check() error {
	if r.RosterEntry != "" && r.RosterFile == "" {
		return errors.New("--roster-entry requires --roster-file")
	}
	if r.LoopFile == "" && r.TeamFile == "" && r.RosterFile == "" {
		return errors.New("at least one of --loop-file, --team-file, or --roster-file is required")
	}
	return nil
}

// VerifyTo runs Verify and prints its "error: " lines to errw, then its
// "ok: " lines to okw; it reports whether every config was fine.
func VerifyTo(r VerifyRequest, okw, errw io.Writer) bool {
	oks, errs := Verify(r)
	for _, e := range errs {
		fmt.Fprintf(errw, "error: %s\n", e)
	}
	for _, o := range oks {
		fmt.Fprintf(okw, "ok: %s\n", o)
	}
	return len(errs) == 0
}
