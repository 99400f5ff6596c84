package permission

import (
	"errors"
	"fmt"
	"io"
)

// AnswerCommand is `avenor answer [flags] <perm-base>`
// (docs/permission-handler.md#avenor-answer) once its flags are parsed:
// it checks the command line, writes a as the response (WriteAnswer) and
// returns the exit code — 2 for a command line or an answer the request
// does not take, 1 for a response that could not be written — saying why
// on stderr.
func AnswerCommand(args []string, a Answer, force bool, stderr io.Writer) int {
	fail := func(code int, format string, v ...any) int {
		fmt.Fprintf(stderr, "avenor answer: "+format+"\n", v...)
		return code
	}
	switch {
	case len(args) != 1:
		return fail(2, "expected one <perm-base> argument, got %d", len(args))
	case a.OptionID == "":
		return fail(2, "--option is required")
	case a.Outcome != "selected" && a.Outcome != "cancelled":
		return fail(2, "--outcome must be selected or cancelled, got %q", a.Outcome)
	}
	if _, err := WriteAnswer(args[0], a, force); err != nil {
		if errors.Is(err, ErrInvalid) {
			return fail(2, "%v", err)
		}
		return fail(1, "%v", err)
	}
	return 0
}
