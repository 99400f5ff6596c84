package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/internal/nearest"
)

// Did-you-mean: a typo in a command, a flag or a backend is answered with
// the nearest name that exists (internal/nearest).

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
		if c, ok := nearest.Name(arg, commandNames(cmd.Root())); ok {
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
	if n, ok := nearest.Name(name, names); ok {
		return fmt.Errorf("%w; did you mean --%s?", err, n)
	}
	return err
}

// backendHint is plugins.BackendHint with the backends installed here.
func backendHint(ctx context.Context, env Env, err error) error {
	var nf *plugins.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	names := backendNames(ctx, env)
	if len(names) == 0 {
		return err
	}
	return plugins.BackendHint(nf, names)
}
