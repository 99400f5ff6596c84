package run

import (
	"context"
	"fmt"
	"github.com/avenor-go/avenor/host/sandbox"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/host/plugins"
	"github.com/avenor-go/avenor/sdk/plugin"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ListTimeout bounds starting one plugin and asking it for its backends.
const ListTimeout = 30 * time.Second

// CatalogTimeout bounds asking one plugin for its backends' catalogs
// (`avenor backends --models`), after their Checks: a catalog that takes
// longer is a models_error, never a missing or unready row.
const CatalogTimeout = 15 * time.Second

// BackendRow is one backend as `avenor backends --json` lists it: the
// plugin serving it, the capabilities it declares and whether its runtime
// is usable here.
type BackendRow struct {
	Backend        string                         `json:"backend"`
	Plugin         string                         `json:"plugin"`
	PluginVersion  string                         `json:"plugin_version"`
	PluginPath     string                         `json:"plugin_path"`
	Source         string                         `json:"source"`
	Description    string                         `json:"description,omitempty"`
	Capabilities   map[sdk.Capability]sdk.Support `json:"capabilities"`
	ResumeScope    string                         `json:"resume_scope,omitempty"`
	ThinkingLevels []string                       `json:"thinking_levels"`
	Ready          bool                           `json:"ready"`
	RuntimeBinary  string                         `json:"runtime_binary,omitempty"`
	RuntimeVersion string                         `json:"runtime_version,omitempty"`
	Auth           string                         `json:"auth,omitempty"`
	Message        string                         `json:"message,omitempty"`
	Error          string                         `json:"error,omitempty"`

	// Only with --models (ListOptions.Models); absent otherwise, so the
	// listing without the flag is what it always was.

	// Models the runtime reports here: [] when it lists none, does not
	// list models (capabilities.model_listing unsupported) or failed.
	Models []sdk.Model `json:"models,omitzero"`
	// ModelsTruncated: the runtime listed more than the catalog's bounds.
	ModelsTruncated bool `json:"models_truncated,omitempty"`
	// ModelsError says why the list failed; the row is otherwise as Check
	// left it.
	ModelsError string `json:"models_error,omitempty"`
	// AuthMessage is the runtime's status command's verdict, in one line.
	AuthMessage string `json:"auth_message,omitempty"`

	// SandboxMechanisms, with ListOptions.Sandbox and on a backend that
	// declares capability sandbox, are the mechanisms a --sandbox run of
	// it can use on this machine: [] for none (such a run is refused).
	SandboxMechanisms []string `json:"sandbox_mechanisms,omitzero"`
}

// ListOptions chooses what ListBackendsWith asks each plugin; the zero
// value asks what `avenor backends` always has.
type ListOptions struct {
	// Models asks each backend for its catalog (within CatalogTimeout per
	// plugin): the row gains models (and models_error when the list
	// failed), capabilities.model_listing, and an auth in the vocabulary
	// authenticated|required|rejected|unknown.
	Models bool
	// Sandbox, when set, are this machine's sandbox mechanisms
	// (SandboxMechanisms): rows of backends that declare capability
	// sandbox gain sandbox_mechanisms.
	Sandbox []sandbox.Status
}

// ListBackends launches every plugin finder finds (a pinned one as its pin)
// and asks each for its backends and their readiness (Check), each plugin
// within ListTimeout; a backend the config maps to another plugin
// ([backends.X] plugin) is listed from that plugin only, as run would use
// it. A plugin that does not start is a row with Error set. Sorted by
// backend.
func ListBackends(ctx context.Context, finder plugins.Finder) []BackendRow {
	return ListBackendsWith(ctx, finder, ListOptions{})
}

// ListBackendsWith is ListBackends asking what opts says besides.
func ListBackendsWith(ctx context.Context, finder plugins.Finder, opts ListOptions) []BackendRow {
	if ctx == nil {
		ctx = context.Background()
	}
	rows := []BackendRow{}
	for _, found := range finder.All() {
		lctx, cancel := context.WithTimeout(ctx, ListTimeout)
		c, err := plugin.Launch(lctx, plugin.LaunchConfig{Path: found.Path, Logger: hclog.NewNullLogger()})
		if err != nil {
			cancel()
			rows = append(rows, BackendRow{Plugin: found.Family, PluginPath: found.Path, Source: found.Source, Error: err.Error()})
			continue
		}
		first := len(rows)
		for _, info := range c.Backends() {
			if finder.Family(info.Name) != found.Family && finder.Families[info.Name] != "" {
				// The config maps this backend to another plugin: that
				// one's row is the backend run would use.
				continue
			}
			b, _ := c.Backend(info.Name)
			r := b.Check(lctx, sdk.CheckRequest{Backend: info.Name})
			caps := map[sdk.Capability]sdk.Support{}
			// The matrix rows, then the launch matrix's: which permission
			// modes and launch-context fields the backend honours.
			for _, name := range append(append([]sdk.Capability{}, sdk.CapabilityNames...), sdk.LaunchCapabilityNames...) {
				caps[name] = info.Capability(name)
			}
			rows = append(rows, BackendRow{
				Backend: info.Name, Plugin: c.Info().Name, PluginVersion: c.Info().Version, PluginPath: found.Path,
				Source: found.Source, Description: info.Description, Capabilities: caps, ResumeScope: info.ResumeScope,
				ThinkingLevels: append([]string{}, info.ThinkingLevels...), Ready: r.Ready, RuntimeBinary: r.Binary,
				RuntimeVersion: r.Version, Auth: r.Auth, Message: r.Message,
			})
		}
		if opts.Models {
			addCatalogs(ctx, c, rows[first:])
		}
		c.Kill()
		cancel()
	}
	if opts.Sandbox != nil {
		addSandboxMechanisms(rows, opts.Sandbox)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Backend < rows[j].Backend })
	return rows
}

// CapMark is a capability's cell in the backends table: yes, exp, ? or -.
func CapMark(level sdk.Support) string {
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

// tableCapabilities are the table's capability columns, in order: the
// capabilities the original listed. Those added since (questions, images,
// model listing, the launch capabilities) are in --json and
// docs/backends.md, so that the table a harness of the original reads
// stays as it was (contract decision 20).
var tableCapabilities = []sdk.Capability{
	sdk.CapNewSessions, sdk.CapResume, sdk.CapPrompt, sdk.CapCancel, sdk.CapEventStreaming,
	sdk.CapPermissionRelay, sdk.CapModelSelection, sdk.CapExternalServerURL, sdk.CapSubprocessDiscovery, sdk.CapPrewarm,
}

var capHeaders = map[sdk.Capability]string{
	sdk.CapNewSessions: "NEW", sdk.CapResume: "RESUME", sdk.CapPrompt: "PROMPT", sdk.CapCancel: "CANCEL",
	sdk.CapEventStreaming: "EVENTS", sdk.CapPermissionRelay: "PERMS", sdk.CapModelSelection: "MODEL",
	sdk.CapExternalServerURL: "URL", sdk.CapSubprocessDiscovery: "PROCS", sdk.CapPrewarm: "WARM",
}

// WriteBackendsTable writes rows as `avenor backends` shows them on a
// terminal: one line a backend, its capabilities as one-word cells, its
// thinking levels and readiness; a plugin that did not start is a line
// with its error.
func WriteBackendsTable(out io.Writer, rows []BackendRow) {
	if len(rows) == 0 {
		fmt.Fprintln(out, "no backend plugins found (looked on AVENOR_PLUGIN_PATH, installed plugins, next to avenor, PATH)")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 2, 2, ' ', 0)
	head := []string{"BACKEND", "PLUGIN"}
	for _, n := range tableCapabilities {
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
		for _, n := range tableCapabilities {
			mark := CapMark(r.Capabilities[n])
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
