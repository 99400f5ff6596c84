// Package plugins finds the plugin binary that serves a backend and launches
// it through sdk/plugin.
//
// Search order (ARCHITECTURE §4, without project pins, which the plugin
// catalog inserts in front later): AVENOR_PLUGIN_PATH, the versioned install
// directory <data>/plugins/<family>/<version>/ (highest version wins), the
// directory of the avenor executable, then PATH. The family of a backend is
// the first word of its name (opencode-http → opencode) unless config maps
// the backend to another plugin.
package plugins
