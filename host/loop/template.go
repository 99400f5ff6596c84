package loop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"text/template"
	"time"
)

// LoopVars are the template variables of a loop's phase prompts (docs/loop.md#prompt-templates).
type LoopVars struct {
	RunID string
	Phase string
	// Iteration is 1-based; 0 in pre and post phases.
	Iteration     int
	MaxIterations int
	WorkDir       string
	// PrevPhaseCommit is HEAD after the previous phase; DiffStat (git diff
	// --stat) and ChangedFiles (one path a line) are what the previous
	// phase changed: from HEAD when it started to HEAD now. All three are
	// empty outside a git repository and before the first phase ends.
	PrevPhaseCommit string
	DiffStat        string
	ChangedFiles    string
}

// TeamVars are the template variables of a team's phase prompts: a team has
// no iterations. All members share the pre phases' commit.
type TeamVars struct {
	RunID           string
	Phase           string
	WorkDir         string
	PrevPhaseCommit string
	DiffStat        string
	ChangedFiles    string
}

// Render executes a phase prompt as a text/template over vars. A reference
// to a variable vars does not have is an error (a team prompt naming
// .Iteration fails at load, not mid-run).
func Render(name, text string, vars any) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("prompt template: %w", err)
	}
	var b strings.Builder
	if err := t.Execute(&b, vars); err != nil {
		if m := unknownField.FindStringSubmatch(err.Error()); m != nil {
			return "", fmt.Errorf("prompt template: unknown variable .%s (these prompts have %s)", m[1], fieldList(vars))
		}
		return "", fmt.Errorf("prompt template: %w", err)
	}
	return b.String(), nil
}

var unknownField = regexp.MustCompile(`can't evaluate field (\w+) in type`)

// fieldList names the variables of a vars struct: ".RunID, .Phase…".
func fieldList(vars any) string {
	t := reflect.TypeOf(vars)
	if t == nil || t.Kind() != reflect.Struct {
		return "no variables"
	}
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = "." + t.Field(i).Name
	}
	return strings.Join(names, ", ")
}

// GitFunc runs git with args in dir and returns its standard output.
type GitFunc func(ctx context.Context, dir string, args ...string) (string, error)

// gitTimeout bounds one git command.
const gitTimeout = 10 * time.Second

// GitCLI runs the git command line, never prompting.
func GitCLI(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	return string(out), err
}

// Delta is what changed in git since the previous phase.
type Delta struct {
	PrevPhaseCommit, DiffStat, ChangedFiles string
}

// head is the commit HEAD names in dir, "" outside a repository or before
// the first commit.
func head(ctx context.Context, git GitFunc, dir string) string {
	out, err := git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// delta is what the previous phase changed: it started at base and ended
// at prev (HEAD after it, "" when there was no previous phase or no
// repository); the diff runs from base (the empty tree when the repository
// had no commit yet) to HEAD.
func delta(ctx context.Context, git GitFunc, dir, base, prev string) Delta {
	if prev == "" {
		return Delta{}
	}
	if base == "" {
		base = emptyTree
	}
	d := Delta{PrevPhaseCommit: prev}
	if out, err := git(ctx, dir, "diff", "--stat", base+"..HEAD"); err == nil {
		d.DiffStat = strings.TrimRight(out, "\n")
	}
	if out, err := git(ctx, dir, "diff", "--name-only", base+"..HEAD"); err == nil {
		d.ChangedFiles = strings.TrimRight(out, "\n")
	}
	return d
}

// emptyTree is git's empty tree object, the base before the first commit.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
