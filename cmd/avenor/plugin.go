package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/plugins"
)

func newPluginCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Manage backend plugins",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "install <path-to-avenor-plugin-binary>",
		Short: "Install a plugin binary into the versioned plugin directory",
		Long: `Ask the binary for its family and version, copy it to
$XDG_DATA_HOME/avenor/plugins/<family>/<version>/avenor-plugin-<family> (written to a temp
file, synced, then renamed) and record its sha256 beside it. Installed versions live side by
side; unpinned runs use the highest.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("plugin install takes one binary path, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs, err := config.DefaultDirs(env.Getenv)
			if err != nil {
				return err
			}
			inst, err := plugins.Install(cmd.Context(), args[0], dirs.PluginDir())
			if err != nil {
				return fmt.Errorf("plugin install: %w", err)
			}
			fmt.Fprintf(env.Stdout, "installed %s %s at %s (%s)\n", inst.Family, inst.Version, inst.Path, inst.SHA256)
			return nil
		},
	})
	return cmd
}
