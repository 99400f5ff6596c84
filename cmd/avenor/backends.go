package main

import (
	"fmt"

	"github.com/spf13/cobra"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// BackendsWidth is the width the default `avenor backends` table fits
// (-o wide and --json show everything).
const BackendsWidth = 100

func newBackendsCmd(env Env) *cobra.Command {
	var asJSON, models bool
	var output string
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "List installed backends with their capabilities and readiness",
		Long:  fmt.Sprintf(help("backends"), BackendsWidth),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "wide" {
				return usageError{fmt.Errorf("-o %q: want wide (or --json)", output)}
			}
			// As run resolves them: this project's pins and the config's
			// [backends.<name>] plugin decide which binary serves a backend.
			resolved, err := hostrun.ResolveWorkingDir(env.resolveEnv(nil))
			if err != nil {
				return err
			}
			mechs := hostrun.SandboxMechanisms(cmd.Context(), env.Getenv)
			rows := hostrun.ListBackendsWith(cmd.Context(), resolved.Finder, hostrun.ListOptions{Models: models, Sandbox: mechs})
			switch {
			case asJSON:
				return writeJSON(env.Stdout, rows)
			case models && output == "wide":
				hostrun.WriteModelsTable(env.Stdout, rows, 0)
			case models:
				hostrun.WriteModelsTable(env.Stdout, rows, BackendsWidth)
			case output == "wide":
				hostrun.WriteBackendsTable(env.Stdout, rows)
				hostrun.WriteBackendsLegend(env.Stdout)
				hostrun.WriteSandboxMechanisms(env.Stdout, mechs)
			default:
				hostrun.WriteBackendsNarrow(env.Stdout, rows, BackendsWidth)
				hostrun.WriteSandboxMechanisms(env.Stdout, mechs)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide: every capability and the whole readiness message")
	cmd.Flags().BoolVar(&models, "models", false, "also ask each backend for the models its runtime reports and its auth state")
	return cmd
}
