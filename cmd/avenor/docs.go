package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/internal/docgen"
)

// docsEnv is the fixed environment the documented command tree is built in,
// so that no default depends on who runs `make docs`.
var docsEnv = Env{Getenv: func(string) string { return "" }}

func newDocsCmd(env Env) *cobra.Command {
	var src, out, pluginDir, root string
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Regenerate the generated documentation (make docs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, from, err := docgen.Generate(cmd.Context(), newRoot(docsEnv), src, out, pluginDir, root)
			if err != nil {
				return err
			}
			if out == "" {
				out = src
			}
			fmt.Fprintf(env.Stdout, "docs: wrote %s (%d plugins from %s)\n", out, n, from)
			return nil
		},
	}
	cmd.Flags().StringVar(&src, "src", "docs", "directory of the hand-written pages")
	cmd.Flags().StringVar(&root, "root", ".", "the repository, whose source the bounds table is read from")
	cmd.Flags().StringVar(&out, "out", "", "directory to write into (default: --src)")
	cmd.Flags().StringVar(&pluginDir, "plugin-dir", "", "directory of the built plugins (default: next to avenor)")
	return cmd
}
