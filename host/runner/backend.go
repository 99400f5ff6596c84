package runner

import (
	"context"
	"io"

	"github.com/avenor-go/avenor/host/event"

	"github.com/avenor-go/avenor/host/plugins"
)

// Backend is one resolved backend: the plugin binary that serves it and the
// config it runs with. host/run resolves it (config layers, family mapping,
// the project's lock, the finder); a one-shot run, every loop or team phase
// and every stable spawn run with one (one resolver: it replaces the three
// copies that were here, in host/loop and in host/stable).
type Backend struct {
	// Name is the backend, e.g. "opencode-acp".
	Name string
	// Found is the plugin binary serving it (Found.Pin set when pinned).
	Found plugins.Found
	// Launch starts a fresh plugin serving the backend, hash-checked when
	// pinned.
	Launch func(ctx context.Context) (*plugins.Launched, error)
	// Env and PluginOptions are [backends.<name>].env and .options; Env
	// values are secrets and never logged.
	Env           map[string]string
	PluginOptions map[string]any
	// StateDir is the plugin family's state directory.
	StateDir string
}

// Apply sets the backend fields of o from b: Backend, Launch, Env,
// PluginOptions and StateDir.
func (b Backend) Apply(o *Options) {
	o.Backend, o.Launch, o.Env, o.PluginOptions, o.StateDir = b.Name, b.Launch, b.Env, b.PluginOptions, b.StateDir
}

// NewEventWriter is the event writer of every run, one-shot, loop, team or
// stable runtime: batched, so that under a flood the log is
// written by its own goroutine, many lines a system call, and a log that
// blocks holds up no runtime. Its owner must Flush (or Close) before the
// sentinel and before exit; Run does before its sentinel, host/loop
// before the loop's.
func NewEventWriter(out io.Writer, stamp event.Stamp) *event.Writer {
	return event.NewWriter(out, stamp, event.Options{Batched: true})
}
