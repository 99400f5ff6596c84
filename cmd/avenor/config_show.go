package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/avenor-go/avenor/host/config"
)

func newConfigCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show avenor's effective settings and where each came from",
		Long:  help("config"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageError{fmt.Errorf("config: name a command: show")}
		},
	}
	cmd.AddCommand(newConfigShowCmd(env))
	return cmd
}

func newConfigShowCmd(env Env) *cobra.Command {
	var asJSON bool
	var dir string
	cmd := &cobra.Command{
		Use:   "show [flags]",
		Short: "Print the effective settings, each with the file, variable or flag that set it",
		Long:  fmt.Sprintf(help("config-show"), config.Redacted),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := "."
			if cmd.Flags().Changed("dir") {
				start = dir
			}
			abs, err := filepath.Abs(start)
			if err != nil {
				return fmt.Errorf("--dir %q: %w", dir, err)
			}
			rep, err := config.Show(env.Getenv, env.Environ, abs, settingFlags(cmd.Flags()), newLogger(env))
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(env.Stdout, rep)
			}
			rep.WriteText(env.Stdout)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.BoolVar(&asJSON, "json", false, "print JSON for scripts")
	for _, k := range config.Keys() {
		if k.Flag == "" {
			continue
		}
		name := strings.TrimPrefix(k.Flag, "--")
		switch {
		case k.Key == "dir":
			fl.StringVar(&dir, name, ".", "as avenor run's --dir; also where the project is looked for")
		case k.Key == "linger":
			fl.String(name, "", "as avenor stable's --linger")
		case k.Type == "bool":
			fl.Bool(name, false, "as avenor run's "+k.Flag)
		default:
			fl.String(name, "", "as avenor run's "+k.Flag)
		}
	}
	return cmd
}

// settingFlags are the flags the user set that are config keys (each key's
// flag of config.Keys), as their text: the config's flag layer parses them
// as it parses a file's values. `avenor run` and `avenor config show`
// layer them the same way.
func settingFlags(fl *pflag.FlagSet) map[string]any {
	out := map[string]any{}
	for _, k := range config.Keys() {
		if name := strings.TrimPrefix(k.Flag, "--"); name != "" && fl.Changed(name) {
			out[k.Key] = fl.Lookup(name).Value.String()
		}
	}
	return out
}
