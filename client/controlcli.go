package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// ControlCommand is one `avenor control` command of one call
// (docs/cli.md#avenor-control): its arguments, the method it calls and
// what it prints.
type ControlCommand struct {
	// Use is the command line after `avenor control --socket <path>`.
	Use, Method, Short string
	// Done is printed when the call succeeds; "" prints the answer as
	// indented JSON.
	Done string
	// MinArgs and MaxArgs bound the positional arguments.
	MinArgs, MaxArgs int
	// Params are the call's params for the arguments; nil sends none. An
	// error is an argument the command cannot take.
	Params func(args []string) (map[string]any, error)
}

// Name is the command's name, the first word of Use.
func (c ControlCommand) Name() string { return strings.Fields(c.Use)[0] }

// CheckArgs refuses a count of arguments outside MinArgs..MaxArgs, showing
// the command's usage.
func (c ControlCommand) CheckArgs(args []string) error {
	if len(args) < c.MinArgs || len(args) > c.MaxArgs {
		return fmt.Errorf("%s: usage: avenor control --socket <path> %s", c.Name(), c.Use)
	}
	return nil
}

// Call makes the command's call with params (nil: none) on the socket at
// path, within timeout, and returns the answer.
func (c ControlCommand) Call(path string, params map[string]any, timeout time.Duration) (json.RawMessage, error) {
	var p any // none: no params at all, not null
	if params != nil {
		p = params
	}
	var raw json.RawMessage
	err := CallOnce(path, c.Method, p, &raw, timeout)
	return raw, err
}

// ControlCommands are the control commands of one call. The per-runtime
// ones take the runtime id as their last, optional argument.
var ControlCommands = []ControlCommand{
	{Use: "status [runtime-id]", Method: "status", Short: "print the status snapshot", MaxArgs: 1, Params: runtimeArg(0, nil)},
	{Use: "list", Method: "list", Short: "list the supervisor's runtimes", Params: noParams},
	{Use: "cancel [runtime-id]", Method: "cancel", Short: "cancel the run (exit 130)", Done: "cancelled", MaxArgs: 1, Params: runtimeArg(0, nil)},
	{Use: "prompt <text> [runtime-id]", Method: "prompt", Short: "queue a prompt after the current turn", Done: "prompt queued", MinArgs: 1, MaxArgs: 2,
		Params: runtimeArg(1, func(a []string, p map[string]any) { p["text"] = a[0] })},
	{Use: "interrupt-and-prompt <text> [runtime-id]", Method: "interrupt_and_prompt", Short: "cancel the turn in flight and continue with text", Done: "interrupt queued", MinArgs: 1, MaxArgs: 2,
		Params: runtimeArg(1, func(a []string, p map[string]any) { p["text"], p["keep_queue"] = a[0], false })},
	{Use: "answer-permission <request-id> <option-id> [runtime-id]", Method: "answer_permission", Short: "answer the pending permission request", Done: "permission answered", MinArgs: 2, MaxArgs: 3,
		Params: runtimeArg(2, func(a []string, p map[string]any) { p["request_id"], p["option_id"] = a[0], a[1] })},
	{Use: "answer-question <request-id> <answers> [runtime-id]", Method: "answer_question", Short: "answer the runtime's waiting question: answers is a JSON array, one entry per prompt (a string, or an array of strings for a multi choice)", Done: "question answered", MinArgs: 2, MaxArgs: 3,
		Params: answerQuestionParams},
	{Use: "shutdown [graceful|kill|immediate]", Method: "shutdown", Short: "stop the supervisor", Done: "shutting down", MaxArgs: 1, Params: shutdownParams},
	{Use: "tree_budget", Method: "tree_budget", Short: "print the tree budget", Params: noParams},
	{Use: "set-budget <runtime-id> [tokens=N] [usd=X] [wall=D] [resume]", Method: "set_budget", Short: "set a runtime's spend limits; resume continues a runtime a limit paused (stable)", MinArgs: 2, MaxArgs: 5,
		Params: setBudgetParams},
}

// answerQuestionParams are answer-question's params: answers a JSON array
// as given, else one prompt's answer as plain text.
func answerQuestionParams(args []string) (map[string]any, error) {
	p, _ := runtimeArg(2, func(a []string, p map[string]any) { p["request_id"] = a[0] })(args)
	s := args[1]
	if !strings.HasPrefix(strings.TrimSpace(s), "[") {
		p["answers"] = []string{s}
		return p, nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf(`answer-question: answers %q starts with [ but is not JSON: give a JSON array such as '["blue", ["a", "b"]]', or one plain-text answer`, s)
	}
	p["answers"] = json.RawMessage(s)
	return p, nil
}

func noParams([]string) (map[string]any, error) { return nil, nil }

// runtimeArg are the params of a per-runtime command: set's, plus
// runtime_id when args[i] is given.
func runtimeArg(i int, set func(args []string, p map[string]any)) func([]string) (map[string]any, error) {
	return func(args []string) (map[string]any, error) {
		p := map[string]any{}
		if len(args) > i {
			p["runtime_id"] = args[i]
		}
		if set != nil {
			set(args, p)
		}
		return p, nil
	}
}

func shutdownParams(args []string) (map[string]any, error) {
	mode := "graceful"
	if len(args) > 0 {
		mode = args[0]
	}
	switch mode {
	case "graceful", "kill", "immediate":
	default:
		return nil, fmt.Errorf("shutdown: unknown mode %q (graceful, kill or immediate)", mode)
	}
	return map[string]any{"mode": mode}, nil
}

// WriteIndented writes a server's answer as indented JSON and a newline.
func WriteIndented(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	buf.WriteByte('\n')
	_, _ = w.Write(buf.Bytes())
	return nil
}
