package main

import (
	"fmt"
	"os"
	"path/filepath"

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
			if out == "" {
				out = src
			}
			if pluginDir == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				pluginDir = filepath.Dir(exe)
			}
			ps, err := docgen.Describe(cmd.Context(), pluginDir)
			if err != nil {
				return err
			}
			if err := docgen.WriteCLI(newRoot(docsEnv), out); err != nil {
				return err
			}
			sections, err := docgen.Sections(root, ps)
			if err != nil {
				return err
			}
			if err := docgen.SpliceAll(src, out, sections); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "docs: wrote %s (%d plugins from %s)\n", out, len(ps), pluginDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&src, "src", "docs", "directory of the hand-written pages")
	cmd.Flags().StringVar(&root, "root", ".", "the repository, whose source the bounds table is read from")
	cmd.Flags().StringVar(&out, "out", "", "directory to write into (default: --src)")
	cmd.Flags().StringVar(&pluginDir, "plugin-dir", "", "directory of the built plugins (default: next to avenor)")
	return cmd
}
