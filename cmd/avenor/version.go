package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// Commit is the VCS revision avenor was built from, set at build time like
// Version: -ldflags "-X main.Commit=<sha>" (make build and the release
// archives set it). Without it, the revision Go recorded in the build info
// (go build in a checkout with -buildvcs) is used.
var Commit = ""

// versionInfo is what `avenor version` reports.
type versionInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	Go             string `json:"go"`
	Platform       string `json:"platform"`
	PluginProtocol int    `json:"plugin_protocol"`
}

func newVersionCmd(env Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print avenor's version, commit, Go version and plugin protocol",
		Long:  help("version"),
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := currentVersion()
			if asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			fmt.Fprintf(env.Stdout, "avenor v%s\ncommit:          %s\ngo:              %s\nplatform:        %s\nplugin protocol: %d\n",
				v.Version, v.Commit, v.Go, v.Platform, v.PluginProtocol)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}

func currentVersion() versionInfo {
	return versionInfo{
		Version:        Version,
		Commit:         buildCommit(Commit, debug.ReadBuildInfo),
		Go:             runtime.Version(),
		Platform:       runtime.GOOS + "/" + runtime.GOARCH,
		PluginProtocol: plugin.ProtocolVersion,
	}
}

// buildCommit prefers the commit given at link time; a build info revision
// from a checkout with uncommitted changes is marked "-dirty".
func buildCommit(linked string, read func() (*debug.BuildInfo, bool)) string {
	if linked != "" {
		return linked
	}
	bi, ok := read()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
