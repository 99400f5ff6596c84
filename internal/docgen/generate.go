package docgen

import (
	"context"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// Generate is `make docs`: it writes the command reference of cli into
// out (default: src) and splices the generated sections — from the
// plugins in pluginDir (default: next to the running executable) and the
// source under repo — into the pages of src, written to out. It returns
// the plugins described and the directory they came from.
func Generate(ctx context.Context, cli *cobra.Command, src, out, pluginDir, repo string) (plugins int, from string, err error) {
	if out == "" {
		out = src
	}
	if pluginDir == "" {
		exe, err := os.Executable()
		if err != nil {
			return 0, "", err
		}
		pluginDir = filepath.Dir(exe)
	}
	ps, err := Describe(ctx, pluginDir)
	if err != nil {
		return 0, "", err
	}
	if err := WriteCLI(cli, out); err != nil {
		return 0, "", err
	}
	sections, err := Sections(repo, ps)
	if err != nil {
		return 0, "", err
	}
	return len(ps), pluginDir, SpliceAll(src, out, sections)
}
