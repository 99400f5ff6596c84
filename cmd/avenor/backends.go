package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// backendRow is one backend of `avenor backends --json`.
type backendRow struct {
	Backend        string            `json:"backend"`
	Plugin         string            `json:"plugin"`
	PluginVersion  string            `json:"plugin_version"`
	PluginPath     string            `json:"plugin_path"`
	Source         string            `json:"source"`
	Description    string            `json:"description,omitempty"`
	Capabilities   map[string]string `json:"capabilities"`
	ResumeScope    string            `json:"resume_scope,omitempty"`
	ThinkingLevels []string          `json:"thinking_levels"`
	Ready          bool              `json:"ready"`
	RuntimeBinary  string            `json:"runtime_binary,omitempty"`
	RuntimeVersion string            `json:"runtime_version,omitempty"`
	Auth           string            `json:"auth,omitempty"`
	Message        string            `json:"message,omitempty"`
	Error          string            `json:"error,omitempty"`
}

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
			dirs, err := config.DefaultDirs(env.Getenv)
			if err != nil {
				return err
			}
			finder := plugins.NewFinder(env.Getenv, dirs.PluginDir(), nil)
			if wd, err := os.Getwd(); err == nil {
				if project, ok := config.FindProject(wd); ok {
					// This project's pins decide which binary it runs.
					if finder.Lock, err = plugins.ReadLock(project); err != nil {
						return err
					}
				}
			}
			rows := collectBackends(cmd.Context(), finder)
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			printBackends(env.Stdout, rows)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func collectBackends(ctx context.Context, finder plugins.Finder) []backendRow {
	if ctx == nil {
		ctx = context.Background()
	}
	rows := []backendRow{}
	for _, found := range finder.All() {
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := plugin.Launch(lctx, plugin.LaunchConfig{Path: found.Path, Logger: hclog.NewNullLogger()})
		if err != nil {
			cancel()
			rows = append(rows, backendRow{Plugin: found.Family, PluginPath: found.Path, Source: found.Source, Error: err.Error()})
			continue
		}
		for _, info := range c.Backends() {
			b, _ := c.Backend(info.Name)
			r := b.Check(lctx, sdk.CheckRequest{Backend: info.Name})
			caps := map[string]string{}
			for _, name := range sdk.CapabilityNames {
				caps[name] = info.Capability(name)
			}
			rows = append(rows, backendRow{
				Backend: info.Name, Plugin: c.Info().Name, PluginVersion: c.Info().Version, PluginPath: found.Path,
				Source: found.Source, Description: info.Description, Capabilities: caps, ResumeScope: info.ResumeScope,
				ThinkingLevels: append([]string{}, info.ThinkingLevels...), Ready: r.Ready, RuntimeBinary: r.Binary,
				RuntimeVersion: r.Version, Auth: r.Auth, Message: r.Message,
			})
		}
		c.Kill()
		cancel()
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Backend < rows[j].Backend })
	return rows
}

// capMark is the one-character cell of the capability matrix.
func capMark(level string) string {
	switch level {
	case sdk.Supported:
		return "yes"
	case sdk.Experimental:
		return "exp"
	case sdk.Unverified:
		return "?"
	}
	return "-"
}

var capHeaders = map[string]string{
	sdk.CapNewSessions: "NEW", sdk.CapResume: "RESUME", sdk.CapPrompt: "PROMPT", sdk.CapCancel: "CANCEL",
	sdk.CapEventStreaming: "EVENTS", sdk.CapPermissionRelay: "PERMS", sdk.CapModelSelection: "MODEL",
	sdk.CapExternalServerURL: "URL", sdk.CapSubprocessDiscovery: "PROCS",
}

func printBackends(out io.Writer, rows []backendRow) {
	if len(rows) == 0 {
		fmt.Fprintln(out, "no backend plugins found (looked on AVENOR_PLUGIN_PATH, installed plugins, next to avenor, PATH)")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	head := []string{"BACKEND", "PLUGIN"}
	for _, n := range sdk.CapabilityNames {
		head = append(head, capHeaders[n])
	}
	head = append(head, "THINKING", "READY")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "?\t%s\t%s\n", r.Plugin, "error: "+r.Error)
			continue
		}
		cells := []string{r.Backend, r.Plugin + " " + r.PluginVersion}
		for _, n := range sdk.CapabilityNames {
			mark := capMark(r.Capabilities[n])
			if n == sdk.CapResume && r.ResumeScope == sdk.ResumeInProcess && mark != "-" {
				mark += "(in-process)"
			}
			cells = append(cells, mark)
		}
		thinking := strings.Join(r.ThinkingLevels, ",")
		if thinking == "" {
			thinking = "-"
		}
		ready := "yes"
		if !r.Ready {
			ready = "no: " + r.Message
		} else if r.RuntimeVersion != "" {
			ready = "yes (" + r.RuntimeVersion + ")"
		}
		cells = append(cells, thinking, ready)
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
}
