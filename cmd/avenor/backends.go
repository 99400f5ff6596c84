package main

import (
	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
)

func newBackendsCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "List installed backends with their capabilities and readiness",
		Long: `List every backend served by the plugins avenor can find (AVENOR_PLUGIN_PATH, installed
plugins, next to avenor, PATH): the capability matrix each plugin declares, and whether the
runtime is usable here (binary found, its version, authentication where knowable).

A table on a terminal; --json prints one JSON array for scripts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// As run resolves them: this project's pins and the config's
			// [backends.<name>] plugin decide which binary serves a backend.
			resolved, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
			if err != nil {
				return err
			}
			rows := hostrun.ListBackends(cmd.Context(), resolved.Finder)
			if asJSON {
				return writeJSON(env.Stdout, rows)
			}
			hostrun.WriteBackendsTable(env.Stdout, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
