// Package sessionstate keeps a plugin's small per-session records in one
// JSON file in the plugin's state directory (runtime.OpenRequest.StateDir),
// so a fresh plugin process can resume a session by id: what makes a
// backend's cross_process resume scope honest when the runtime itself keeps
// nothing. Plugins import it; the host does not.
package sessionstate
