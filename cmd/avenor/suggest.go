package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/host/plugins"
)

// Did-you-mean: a typo in a command, a flag or a backend is answered with
// the nearest name that exists, as git, gh and kubectl do.

// editDistance is the optimal-string-alignment distance of a and b:
// insertions, deletions, substitutions and transpositions of neighbours
// ("ecoh" is one edit from "echo").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// nearest is the candidate closest to typed, when it is close enough to be
// a typo: one edit for a short word, two for a longer one, or typed is a
// prefix of it. Ties go to the first in candidates' order.
func nearest(typed string, candidates []string) (string, bool) {
	typed = strings.ToLower(typed)
	limit := 1
	if len([]rune(typed)) > 4 {
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		dist := editDistance(typed, strings.ToLower(c))
		if dist < bestD && dist > 0 {
			best, bestD = c, dist
		}
	}
	if best == "" && len(typed) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, typed) && c != typed {
				return c, true
			}
		}
	}
	return best, best != ""
}

// commandNames are root's visible sub-commands.
func commandNames(root *cobra.Command) []string {
	var out []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			out = append(out, c.Name())
		}
	}
	return out
}

// refuseRunArg is run's answer to a positional argument: a word close to a
// command is a mistyped command (a one-word prompt needs --prompt), anything
// else a prompt given without its flag.
func refuseRunArg(cmd *cobra.Command, arg string) error {
	if !strings.ContainsAny(arg, " \t\n") {
		if c, ok := nearest(arg, commandNames(cmd.Root())); ok {
			return usageError{fmt.Errorf("unknown command %q; did you mean %s? (a one-word prompt: --prompt %q)", arg, c, arg)}
		}
	}
	return usageError{fmt.Errorf("unexpected argument %q (flags take a value: --prompt %q)", arg, arg)}
}

// flagHint adds the nearest flag of cmd to cobra's "unknown flag: --promt".
func flagHint(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if n, ok := nearest(name, names); ok {
		return fmt.Errorf("%w; did you mean --%s?", err, n)
	}
	return err
}

// backendHint adds the nearest installed backend, and the installed ones,
// to an unknown backend's error.
func backendHint(ctx context.Context, env Env, err error) error {
	var nf *plugins.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	names := backendNames(ctx, env)
	if len(names) == 0 {
		return err
	}
	sort.Strings(names)
	hint := "installed: " + strings.Join(names, ", ")
	if n, ok := nearest(nf.Backend, names); ok {
		hint = "did you mean " + n + "? " + hint
	}
	// The first line stays the contract's `unknown backend "X"` (docs/run.md#validation).
	return fmt.Errorf("unknown backend %q\n%s\n%w", nf.Backend, hint, nf)
}
