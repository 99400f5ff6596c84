package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// newCompletionCmd is `avenor completion bash|zsh|fish`. cobra's own
// completion command is off (DisableDefaultCmd): cobra adds it only while
// executing, too late for the dispatch (docs/cli.md#avenor) to know that "completion" is
// a sub-command and not the start of a run.
func newCompletionCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:       "completion bash|zsh|fish",
		Short:     "Print the shell completion script of bash, zsh or fish",
		Long:      help("completion"),
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("completion: name one shell: bash, zsh or fish")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(env.Stdout, true)
			case "zsh":
				return root.GenZshCompletion(env.Stdout)
			case "fish":
				return root.GenFishCompletion(env.Stdout, true)
			}
			return usageError{fmt.Errorf("completion: unknown shell %q: want bash, zsh or fish", args[0])}
		},
	}
	return cmd
}

// registerBackendCompletion makes every --backend flag of the tree complete
// from the installed plugins.
func registerBackendCompletion(root *cobra.Command, env Env) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("backend") != nil {
			_ = c.RegisterFlagCompletionFunc("backend", func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
				return matching(backendNames(cmd.Context(), env), prefix), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// backendNames are the backends a run here could name: those the plugins it
// would find serve (the project's pins first, the config files' plugin
// mappings applied, as a run resolves them). A config or lock that does
// not read leaves them all out: completion has nowhere to report it.
func backendNames(ctx context.Context, env Env) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
	if err != nil {
		return nil
	}
	return res.Finder.BackendNames(ctx)
}

func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
