package scripted

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// Step is one command of a script. Only the fields its command uses are set.
type Step struct {
	Line int    // 1-based line number in the script
	Cmd  string // the command word, e.g. "say"

	// Text is the text of say, think, fail and write; the reason of stop;
	// the title of tool; the command of shell; the chunk text of chunks; the
	// question of permission.
	Text string
	// Path is the relative path of write.
	Path string
	// N is the count of chunks and flood.
	N int
	// Duration is how long sleep sleeps, the gap between chunks, and how
	// long the child of child lives.
	Duration time.Duration
	// Kind is the kind of tool.
	Kind string
	// Tool, Options and UserInput describe a permission request.
	Tool      string
	Options   []runtime.PermissionOption
	UserInput bool
	// Usage is what usage sets; CostUSD its cost=, -1 when it gave none;
	// Window its window= (the context window, whose use is in=), 0 none.
	Usage   runtime.Usage
	CostUSD float64
	Window  int64
	// Prompts are the prompts of question.
	Prompts []runtime.QuestionPrompt
	// Pct is account's used share of its window, 0–100.
	Pct float64
	// ResetAt is ratelimit's absolute reset; zero when it is relative
	// (Duration from the moment the step runs).
	ResetAt time.Time
}

// Bounds on arguments, so a typo cannot ask for a year of sleep or a
// billion chunks.
const (
	maxCount    = 10_000_000
	maxDuration = 24 * time.Hour
	// maxToolprocs bounds toolproc's n.
	maxToolprocs = 256
)

// defaultOptions are the options of a permission without options=.
var defaultOptions = []runtime.PermissionOption{
	{ID: "allow", Kind: runtime.KindAllowOnce},
	{ID: "deny", Kind: runtime.KindReject},
}

// Parse reads a script (see the package documentation) into its steps. The
// error names the first bad line.
func Parse(script string) ([]Step, error) {
	var steps []Step
	for i, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, rest := line, ""
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			cmd, rest = line[:i], strings.TrimSpace(line[i+1:])
		}
		st, err := parseStep(cmd, rest)
		if err != nil {
			return nil, fmt.Errorf("script line %d (%q): %w", i+1, clip(line), err)
		}
		st.Line, st.Cmd = i+1, cmd
		steps = append(steps, st)
	}
	return steps, nil
}

func parseStep(cmd, rest string) (Step, error) {
	var st Step
	var err error
	switch cmd {
	case "say", "think", "fail", "error":
		st.Text, err = text(rest)
		if err == nil && (cmd == "fail" || cmd == "error") && st.Text == "" {
			err = fmt.Errorf("%s needs a message", cmd)
		}
	case "shell", "lines", "toolsh":
		st.Text = rest
		if rest == "" {
			err = fmt.Errorf("%s needs a command", cmd)
		}
	case "write":
		path, body, _ := strings.Cut(rest, " ")
		st.Path = path
		if !filepath.IsLocal(path) {
			return st, fmt.Errorf("write needs a relative path inside the session directory, got %q", path)
		}
		st.Text, err = text(strings.TrimSpace(body))
	case "stop":
		var a args
		if a, err = parseArgs(rest); err == nil {
			st.Text, err = a.one("a stop reason")
		}
	case "sleep":
		var a args
		if a, err = parseArgs(rest); err == nil {
			var d string
			if d, err = a.one("a duration"); err == nil {
				st.Duration, err = duration(d)
			}
		}
	case "child":
		var a args
		if a, err = parseArgs(rest); err == nil {
			var s string
			if s, err = a.one("a number of seconds"); err == nil {
				st.Duration, err = seconds(s)
			}
		}
	case "flood":
		var a args
		if a, err = parseArgs(rest); err == nil {
			var n string
			if n, err = a.one("a count"); err == nil {
				st.N, err = count(n)
			}
		}
	case "chunks":
		err = parseChunks(&st, rest)
	case "tool":
		err = parseTool(&st, rest)
	case "toolproc":
		err = parseToolproc(&st, rest)
	case "permission":
		err = parsePermission(&st, rest)
	case "question":
		err = parseQuestion(&st, rest)
	case "usage":
		err = parseUsage(&st, rest)
	case "ratelimit":
		err = parseRateLimit(&st, rest)
	case "account":
		err = parseAccount(&st, rest)
	case "die", "ignore-cancel", "announce", "images":
		if rest != "" {
			err = fmt.Errorf("%s takes no arguments", cmd)
		}
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	return st, err
}

func parseChunks(st *Step, rest string) error {
	a, err := parseArgs(rest, "every", "text")
	if err != nil {
		return err
	}
	n, err := a.one("a count")
	if err != nil {
		return err
	}
	if st.N, err = count(n); err != nil {
		return err
	}
	if v, ok := a.opts["every"]; ok {
		if st.Duration, err = duration(v); err != nil {
			return err
		}
	}
	st.Text = a.opts["text"]
	return nil
}

func parseTool(st *Step, rest string) error {
	a, err := parseArgs(rest, "kind")
	if err != nil {
		return err
	}
	if len(a.pos) == 0 {
		return errors.New("tool needs a title")
	}
	st.Text = strings.Join(a.pos, " ")
	st.Kind = a.opts["kind"]
	if st.Kind == "" {
		st.Kind = "other"
	}
	return nil
}

func parseToolproc(st *Step, rest string) error {
	a, err := parseArgs(rest, "n", "for")
	if err != nil {
		return err
	}
	if st.Text, err = a.one("a mode (idle, grandchild, busy-cpu, busy-io, none)"); err != nil {
		return err
	}
	switch st.Text {
	case ModeIdle, ModeGrandchild, ModeBusyCPU, ModeBusyIO, ModeBusy, ModeNone:
	default:
		return fmt.Errorf("unknown toolproc mode %q: want idle, grandchild, busy-cpu, busy-io, busy or none", st.Text)
	}
	st.N, st.Duration = 1, 10*time.Minute
	if v, ok := a.opts["n"]; ok {
		if st.N, err = count(v); err != nil {
			return err
		}
		if st.N < 1 || st.N > maxToolprocs {
			return fmt.Errorf("n=%s: between 1 and %d tool calls", v, maxToolprocs)
		}
	}
	if v, ok := a.opts["for"]; ok {
		if st.Duration, err = duration(v); err != nil {
			return err
		}
	}
	return nil
}

func parsePermission(st *Step, rest string) error {
	a, err := parseArgs(rest, "tool", "question", "options", "user_input")
	if err != nil {
		return err
	}
	if len(a.pos) > 0 {
		return fmt.Errorf("unexpected argument %q", a.pos[0])
	}
	st.Tool, st.Text = a.opts["tool"], a.opts["question"]
	st.Options = defaultOptions
	if v, ok := a.opts["options"]; ok {
		st.Options = nil
		seen := map[string]bool{}
		for _, o := range strings.Split(v, ",") {
			id, kind, _ := strings.Cut(o, ":")
			if id == "" || kind == "" {
				return fmt.Errorf("option %q is not <id>:<kind>", o)
			}
			if seen[id] {
				return fmt.Errorf("option id %q given twice", id)
			}
			seen[id] = true
			st.Options = append(st.Options, runtime.PermissionOption{ID: id, Kind: kind})
		}
	}
	if v, ok := a.opts["user_input"]; ok {
		if st.UserInput, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("user_input=%q is not true or false", v)
		}
	}
	return nil
}

// parseQuestion reads `question <text> [options=a|b|c] [multi=true]
// [and=<text>]`: one prompt, its options separated by |, and a second,
// free-text prompt with and=.
func parseQuestion(st *Step, rest string) error {
	a, err := parseArgs(rest, "options", "multi", "and")
	if err != nil {
		return err
	}
	if len(a.pos) == 0 {
		return errors.New("question needs its text")
	}
	p := runtime.QuestionPrompt{Question: strings.Join(a.pos, " ")}
	if v, ok := a.opts["options"]; ok {
		for _, o := range strings.Split(v, "|") {
			if o == "" {
				return fmt.Errorf("options=%q has an empty option", v)
			}
			p.Options = append(p.Options, o)
		}
	}
	if v, ok := a.opts["multi"]; ok {
		if p.Multi, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("multi=%q is not true or false", v)
		}
	}
	st.Prompts = []runtime.QuestionPrompt{p}
	if v, ok := a.opts["and"]; ok {
		st.Prompts = append(st.Prompts, runtime.QuestionPrompt{Question: v})
	}
	return nil
}

func parseUsage(st *Step, rest string) error {
	a, err := parseArgs(rest, "in", "out", "cost", "window")
	if err != nil {
		return err
	}
	if len(a.pos) > 0 || len(a.opts) == 0 {
		return errors.New("usage takes in=<n> out=<n> [cost=<usd>] [window=<n>]")
	}
	if v, ok := a.opts["window"]; ok {
		n, err := count(v)
		if err != nil {
			return fmt.Errorf("window=: %w", err)
		}
		st.Window = int64(n)
	}
	st.CostUSD = -1
	if v, ok := a.opts["cost"]; ok {
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || c < 0 || math.IsInf(c, 0) || math.IsNaN(c) {
			return fmt.Errorf("cost=: %q is not a non-negative number of US dollars", v)
		}
		st.CostUSD = c
	}
	for key, dst := range map[string]*int64{"in": &st.Usage.InputTokens, "out": &st.Usage.OutputTokens} {
		if v, ok := a.opts[key]; ok {
			n, err := count(v)
			if err != nil {
				return fmt.Errorf("%s=: %w", key, err)
			}
			*dst = int64(n)
		}
	}
	st.Usage.TotalTokens = st.Usage.InputTokens + st.Usage.OutputTokens
	return nil
}

// parseRateLimit reads `ratelimit <reset> [times=<n>]`: the reset is a Go
// duration from when the step runs or an RFC 3339 time; times defaults to 1.
func parseRateLimit(st *Step, rest string) error {
	a, err := parseArgs(rest, "times")
	if err != nil {
		return err
	}
	reset, err := a.one("a reset (a Go duration such as 2s, or an RFC 3339 time)")
	if err != nil {
		return err
	}
	if t, terr := time.Parse(time.RFC3339Nano, reset); terr == nil {
		st.ResetAt = t
	} else if st.Duration, err = duration(reset); err != nil {
		return fmt.Errorf("ratelimit reset %q is neither a Go duration nor an RFC 3339 time", reset)
	}
	st.N = 1
	if v, ok := a.opts["times"]; ok {
		if st.N, err = count(v); err != nil {
			return fmt.Errorf("times=: %w", err)
		}
	}
	return nil
}

// parseAccount reads `account <window> <used_pct> <resets_in>`: the usage
// of one rate-limit window, resetting a Go duration from when it runs.
func parseAccount(st *Step, rest string) error {
	a, err := parseArgs(rest)
	if err != nil {
		return err
	}
	if len(a.pos) != 3 {
		return errors.New("account takes <window> <used_pct> <resets_in>")
	}
	st.Text = a.pos[0]
	pct, err := strconv.ParseFloat(a.pos[1], 64)
	if err != nil || pct < 0 || pct > 100 {
		return fmt.Errorf("account used_pct %q is not a number from 0 to 100", a.pos[1])
	}
	st.Pct = pct
	st.Duration, err = duration(a.pos[2])
	return err
}

// args are a command's arguments: positional ones and key=value options.
type args struct {
	pos  []string
	opts map[string]string
}

// one returns the single positional argument, with no options.
func (a args) one(what string) (string, error) {
	if len(a.pos) != 1 {
		return "", fmt.Errorf("want %s, got %d arguments", what, len(a.pos))
	}
	return a.pos[0], nil
}

// parseArgs splits rest into fields; a field written "<key>=..." for one of
// keys is an option, any other field (including a quoted "<key>=...") is
// positional.
func parseArgs(rest string, keys ...string) (args, error) {
	a := args{opts: map[string]string{}}
	fs, err := fields(rest)
	if err != nil {
		return a, err
	}
field:
	for _, f := range fs {
		for _, k := range keys {
			if v, ok := strings.CutPrefix(f.raw, k+"="); ok {
				if _, dup := a.opts[k]; dup {
					return a, fmt.Errorf("%s= given twice", k)
				}
				_ = v
				// The key has no quotes, so the unquoted value starts with it too.
				a.opts[k] = f.value[len(k)+1:]
				continue field
			}
		}
		a.pos = append(a.pos, f.value)
	}
	return a, nil
}

// field is one space-separated argument as written (raw) and with its
// quoted parts unquoted (value).
type field struct{ raw, value string }

// fields splits s at spaces and tabs; a double-quoted part is a Go string
// literal and may hold spaces: `a"b c"d` is the one field "ab cd".
func fields(s string) ([]field, error) {
	var out []field
	start := -1 // start of the current field in s, -1 between fields
	var val strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			if start >= 0 {
				out = append(out, field{raw: s[start:i], value: val.String()})
				start = -1
				val.Reset()
			}
			i++
		case c == '"':
			end := closingQuote(s, i)
			if end < 0 {
				return nil, errors.New("unterminated double quote")
			}
			u, err := strconv.Unquote(s[i : end+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted string %s: %w", clip(s[i:end+1]), err)
			}
			if start < 0 {
				start = i
			}
			val.WriteString(u)
			i = end + 1
		default:
			if start < 0 {
				start = i
			}
			val.WriteByte(c)
			i++
		}
	}
	if start >= 0 {
		out = append(out, field{raw: s[start:], value: val.String()})
	}
	return out, nil
}

// closingQuote returns the index of the quote closing the one at s[open],
// or -1.
func closingQuote(s string, open int) int {
	for j := open + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// text is a <text> argument: the rest of the line as written, or, when it
// is one double-quoted literal, that literal unquoted.
func text(rest string) (string, error) {
	if !strings.HasPrefix(rest, `"`) {
		return rest, nil
	}
	if end := closingQuote(rest, 0); end != len(rest)-1 {
		return rest, nil // "a" b: not one literal, taken as written
	}
	u, err := strconv.Unquote(rest)
	if err != nil {
		return "", fmt.Errorf("bad quoted text %s: %w", clip(rest), err)
	}
	return u, nil
}

func count(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxCount {
		return 0, fmt.Errorf("%q is not a count between 0 and %d", s, maxCount)
	}
	return n, nil
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > maxDuration {
		return 0, fmt.Errorf("%q is not a duration between 0s and %v (e.g. 250ms, 2s)", s, maxDuration)
	}
	return d, nil
}

func seconds(s string) (time.Duration, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > maxDuration.Seconds() {
		return 0, fmt.Errorf("%q is not a number of seconds between 0 and %v", s, maxDuration.Seconds())
	}
	return time.Duration(f * float64(time.Second)), nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
