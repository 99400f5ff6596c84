// Package sandbox owns the host's side of a sandboxed run
// (docs/sandbox.md): the --sandbox profiles and their flags turned into
// the boundary a plugin launches its runtime inside (sdk/runtime.Sandbox),
// the documented deny list of secrets under $HOME, and the choice of the
// mechanism that enforces a profile on this machine (Choose: bubblewrap,
// else Landlock, else refused; Mechanisms for `avenor backends`). It fails closed: a profile the
// machine cannot enforce, a relative or missing path, is refused before
// anything starts, and nothing here ever falls back to running without
// the boundary. Building bwrap's command line is the plugin's
// (sdk/agentproc.BwrapArgs), because the plugin launches the runtime.
package sandbox
