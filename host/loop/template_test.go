package loop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	loopVars := LoopVars{RunID: "r1", Phase: "review", Iteration: 2, MaxIterations: 5, WorkDir: "/w",
		PrevPhaseCommit: "abc", DiffStat: " a.go | 2 +-", ChangedFiles: "a.go\nb.go"}
	for _, c := range []struct {
		name, text string
		vars       any
		want, err  string
	}{
		{"plain", "no variables here", loopVars, "no variables here", ""},
		{"all loop variables", "{{.RunID}} {{.Phase}} {{.Iteration}}/{{.MaxIterations}} {{.WorkDir}} {{.PrevPhaseCommit}}", loopVars,
			"r1 review 2/5 /w abc", ""},
		{"conditionals", "{{if .ChangedFiles}}changed:\n{{.ChangedFiles}}{{else}}first pass{{end}}", loopVars, "changed:\na.go\nb.go", ""},
		{"first pass", "{{if .ChangedFiles}}changed{{else}}first pass{{end}}", LoopVars{}, "first pass", ""},
		{"team variables", "{{.Phase}} in {{.WorkDir}}", TeamVars{Phase: "m1", WorkDir: "/w"}, "m1 in /w", ""},
		{"no iteration in teams", "{{.Iteration}}", TeamVars{}, "", "unknown variable .Iteration"},
		{"syntax", "{{.Phase", loopVars, "", "unclosed action"},
		{"markers pass through", "print [loop: exit | {{.Phase}}]", loopVars, "print [loop: exit | review]", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Render(c.name, c.text, c.vars)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q %v, want %q", got, err, c.want)
			}
		})
	}
}

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
		{"config", "commit.gpgsign", "false"},
	} {
		gitT(t, dir, args...)
	}
	return dir
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := GitCLI(context.Background(), dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

func TestGitDelta(t *testing.T) {
	ctx := context.Background()
	if got := head(ctx, GitCLI, t.TempDir()); got != "" {
		t.Fatalf("head outside a repository: %q", got)
	}
	dir := gitRepo(t)
	if got := head(ctx, GitCLI, dir); got != "" {
		t.Fatalf("head before the first commit: %q", got)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "one")
	prev := head(ctx, GitCLI, dir)
	if len(prev) != 40 {
		t.Fatalf("head %q", prev)
	}
	if d := delta(ctx, GitCLI, dir, prev, prev); d != (Delta{PrevPhaseCommit: prev}) {
		t.Fatalf("the previous phase changed nothing: %+v", d)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\nb\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.txt"), []byte("c\n"), 0o644)
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-qm", "two")
	now := head(ctx, GitCLI, dir)
	d := delta(ctx, GitCLI, dir, prev, now)
	if d.PrevPhaseCommit != now || d.ChangedFiles != "a.txt\nc.txt" ||
		!strings.Contains(d.DiffStat, "2 files changed, 2 insertions(+)") {
		t.Fatalf("%+v", d)
	}
	// A previous phase that started before the first commit: from the empty tree.
	if d := delta(ctx, GitCLI, dir, "", now); d.ChangedFiles != "a.txt\nc.txt" || !strings.Contains(d.DiffStat, "2 files changed, 3 insertions(+)") {
		t.Fatalf("from the empty tree: %+v", d)
	}
	if d := delta(ctx, GitCLI, dir, "", ""); d != (Delta{}) {
		t.Fatalf("no previous phase: %+v", d)
	}
}
