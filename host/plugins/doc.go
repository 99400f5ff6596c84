// Package plugins is avenor's plugin catalog: it finds the plugin binary
// that serves a backend, installs binaries side by side by version, keeps a
// project's pins in its lock file, and launches plugins through sdk/plugin.
//
// Search order (docs/plugins.md#where-avenor-looks): the project's pin in .avenor/plugins.lock
// (see Lock), then AVENOR_PLUGIN_PATH, the versioned install directory
// <data>/plugins/<family>/<version>/ (highest version wins), the directory
// of the avenor executable, then PATH. A pinned family resolves to exactly
// its pinned binary, whose hash is checked before it runs; a missing or
// changed pinned binary is a *PinError, never a fallback to another binary.
// The family of a backend is the first word of its name (opencode-http →
// opencode) unless config maps the backend to another plugin.
//
// cmd/avenor uses this package; plugins never import it.
package plugins
