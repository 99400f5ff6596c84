package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugintest"
)

func newPluginCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Install, pin, list and verify backend plugins",
		Long:  help("plugin"),
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newPluginInstallCmd(env), newPluginUseCmd(env), newPluginUnpinCmd(env),
		newPluginListCmd(env), newPluginVerifyCmd(env))
	return cmd
}

func newPluginInstallCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "install <path-to-avenor-plugin-binary>",
		Short: "Install a plugin binary into the versioned plugin directory",
		Long:  help("plugin-install"),
		Args:  exactArgs("plugin install takes one binary path", 1),
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
			if inst.Replaced != "" {
				fmt.Fprintf(env.Stderr, "avenor: warning: this replaced a different %s %s (%s); projects that pinned it will refuse to run the new binary until they pin it again with `avenor plugin use %s@%s`\n",
					inst.Family, inst.Version, inst.Replaced, inst.Family, inst.Version)
			}
			return nil
		},
	}
}

func newPluginUseCmd(env Env) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "use <family>@<version> | use <family> | use --path <binary> [<family>]",
		Short: "Pin a plugin version for this project (.avenor/plugins.lock)",
		Long:  help("plugin-use"),
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usageError{fmt.Errorf("plugin use takes one <family>@<version>, got %d arguments", len(args))}
			case len(args) == 0 && path == "":
				return usageError{fmt.Errorf("plugin use needs <family>@<version> or --path <binary>")}
			case path != "" && len(args) == 1 && strings.Contains(args[0], "@"):
				return usageError{fmt.Errorf("--path and %s are mutually exclusive: a development build is pinned by its hash, not a version", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs, err := config.DefaultDirs(env.Getenv)
			if err != nil {
				return err
			}
			lock, created, err := projectLock(true)
			if err != nil {
				return err
			}
			var pin plugins.Pin
			if path != "" {
				family := ""
				if len(args) == 1 {
					family = args[0]
				}
				if pin, err = plugins.PinBinary(cmd.Context(), lock, path, family); err != nil {
					return fmt.Errorf("plugin use: %w", err)
				}
			} else {
				family, version, err := plugins.ParseFamilyVersion(args[0])
				if err != nil {
					return usageError{err}
				}
				if pin, err = plugins.PinInstalled(lock, dirs.PluginDir(), family, version); err != nil {
					return fmt.Errorf("plugin use: %w", err)
				}
			}
			if err := lock.Write(); err != nil {
				return fmt.Errorf("plugin use: writing %s: %w", lock.File(), err)
			}
			if created {
				fmt.Fprintf(env.Stdout, "created project %s\n", lock.Project)
			}
			fmt.Fprintf(env.Stdout, "pinned %s %s (%s) in %s\n", pin.Family, pin.Version, pin.Hash, lock.File())
			if pin.Path != "" {
				fmt.Fprintf(env.Stderr, "avenor: warning: pinned a development build of %s by path (%s): it is checked by hash, so re-run `avenor plugin use --path` after every rebuild; for a lock you commit, install a release (`avenor plugin install`) and pin its version\n",
					pin.Family, pin.Path)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "path", "", "pin this development build (a plugin binary) instead of an installed version")
	return cmd
}

func newPluginUnpinCmd(env Env) *cobra.Command {
	return &cobra.Command{
		Use:   "unpin <family>",
		Short: "Remove a plugin's pin from this project",
		Args:  exactArgs("plugin unpin takes one plugin family", 1),
		RunE: func(_ *cobra.Command, args []string) error {
			family, _, err := plugins.ParseFamilyVersion(args[0])
			if err != nil {
				return usageError{err}
			}
			lock, _, err := projectLock(false)
			if err != nil {
				return err
			}
			if lock == nil || !lock.Remove(family) {
				where := "this directory is in no avenor project"
				if lock != nil {
					where = "nothing pins it in " + lock.File()
				}
				fmt.Fprintf(env.Stdout, "%s was not pinned: %s\n", family, where)
				return nil
			}
			if err := lock.Write(); err != nil {
				return fmt.Errorf("plugin unpin: writing %s: %w", lock.File(), err)
			}
			fmt.Fprintf(env.Stdout, "unpinned %s in %s\n", family, lock.File())
			return nil
		},
	}
}

func newPluginListCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List installed plugins and which one this project uses, and why",
		Long:  help("plugin-list"),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dirs, err := config.DefaultDirs(env.Getenv)
			if err != nil {
				return err
			}
			lock, _, err := projectLock(false)
			if err != nil {
				return err
			}
			out := plugins.ListProject(plugins.NewFinder(env.Getenv, dirs.PluginDir(), nil), lock)
			if asJSON {
				return writeJSON(env.Stdout, out)
			}
			out.WriteText(env.Stdout)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func newPluginVerifyCmd(env Env) *cobra.Command {
	var (
		asJSON                    bool
		only                      []string
		plain, long, permission   string
		turnTimeout, cancelWithin = plugintest.Harness{}.TurnTimeout, plugintest.Harness{}.CancelWithin
	)
	cmd := &cobra.Command{
		Use:   "verify <path-to-avenor-plugin-binary>",
		Short: "Check a plugin binary against the conformance kit",
		Long:  help("plugin-verify"),
		Args:  exactArgs("plugin verify takes one binary path", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := plugintest.Harness{Only: only, TurnTimeout: turnTimeout, CancelWithin: cancelWithin}
			prompts := map[plugintest.TurnKind]string{plugintest.TurnPlain: plain, plugintest.TurnLong: long, plugintest.TurnPermission: permission}
			h.Prompt = func(backend string, kind plugintest.TurnKind) (string, bool) {
				if p := prompts[kind]; p != "" {
					return p, true
				}
				return plugintest.DefaultPrompt(backend, kind)
			}
			rep, err := plugintest.VerifyBinary(cmd.Context(), args[0], h)
			if err != nil {
				return fmt.Errorf("plugin verify: %w", plugins.ExplainLaunch(args[0], err))
			}
			if asJSON {
				if err := writeJSON(env.Stdout, rep); err != nil {
					return err
				}
			} else if err := rep.WriteText(env.Stdout); err != nil {
				return err
			}
			if len(rep.Failed()) > 0 {
				return exitError{exitFail}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringSliceVar(&only, "backend", nil, "check only this backend (repeatable; default: every backend the plugin serves)")
	fl.StringVar(&plain, "prompt", "", "prompt of a short turn that ends with end_turn")
	fl.StringVar(&long, "long-prompt", "", "prompt of a turn that streams long enough for a Cancel to land in it")
	fl.StringVar(&permission, "permission-prompt", "", "prompt of a turn that asks the host one permission")
	fl.DurationVar(&turnTimeout, "turn-timeout", 0, "bound of one turn (default 30s)")
	fl.DurationVar(&cancelWithin, "cancel-within", 0, "how soon a turn must end after Cancel, Close or a crash (default 5s)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// projectLock is plugins.ProjectLock of the working directory.
func projectLock(create bool) (lock *plugins.Lock, created bool, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, false, err
	}
	return plugins.ProjectLock(wd, create)
}

// exactArgs is cobra.ExactArgs with a usage error naming the command.
func exactArgs(what string, n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s, got %d arguments", what, len(args))}
		}
		return nil
	}
}
