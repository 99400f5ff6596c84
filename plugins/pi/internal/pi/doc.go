// Package pi is avenor's backend for the pi coding agent
// (`@mariozechner/pi-coding-agent`, backend name "pi"; docs/backends.md#pi-plugin-pi,
// runtime-protocols.md §4).
//
// Each session is one pi process:
//
//	pi --mode rpc --session-dir <state>/sessions [--provider P] [--model M] [--thinking L] [--session <file>] [-e <gate.ts>]
//
// started in the session's directory, in a process group of its own that is
// reaped when the session closes. The wire is pi's RPC mode: one JSON object
// per line, split on LF only (a U+2028 inside a string is not a line break).
// The plugin sends get_state (for the session id), prompt and abort; a
// prompt ends at agent_end (unless it says willRetry), with the stop reason
// of the last assistant message. Cancel answers every open dialog with
// cancelled first, then sends abort (an abort with a dialog open can hang
// pi).
//
// # Sessions and resume
//
// pi keeps sessions only when told where: the plugin passes --session-dir
// under its state directory (OpenRequest.StateDir), so any later run, in a
// fresh plugin process, resumes a session by its id (resume scope
// cross_process); the id is looked up there and handed to pi as
// --session <file>. Without a state directory the plugin runs pi with
// --no-session and cannot resume. A session is one pi process: there is
// never a second session in it, and a second prompt while one runs is an
// error.
//
// # Permissions: the gate extension
//
// pi has no permission prompts of its own; it runs every tool at once. The
// plugin therefore ships, embedded in its binary, a small pi extension
// written for avenor (avenor-gate.ts). It is written to
// <state>/extensions/avenor-gate-<hash>.ts and loaded with -e — an
// addition to the original's launch arguments. The gate asks before every
// bash, write and edit tool call with a select dialog ("Allow" / "Deny");
// pi sends it as an extension_ui_request, which the plugin turns into a
// permission request (kind "command", tool = the in-flight tool call,
// input = its arguments up to 4 KB, ui_request_id) and answers with an
// extension_ui_response. Deny blocks the tool: pi reports "Denied by user"
// as the tool's error and the model goes on. A cancelled answer dismisses
// the dialog and cancels the turn. Dialogs of other extensions map the same
// way: confirm → kind "confirm", input/editor → kind "input" (never
// auto-approved).
//
// To run pi without the gate (every tool runs unasked, as in plain pi):
//
//	[backends.pi]
//	options.permission_gate = false
//
// # Options and environment
//
//   - binary (option) or AVENOR_PI_BIN: the pi CLI to run (default "pi" on PATH);
//     pi 0.73.0 or newer, checked with `pi --version` before each session.
//   - provider (option): passed as --provider.
//   - --agent: looked up in agents.json in PI_CODING_AGENT_DIR (or
//     ~/.pi/agent), {"<name>": {"model": …, "provider": …}}; its model and
//     provider apply when --model is not given; pi gets PI_AGENT=<name>.
//   - agent_profile (option): passed as PI_AGENT_PROFILE. Inherited PI_AGENT
//     and PI_AGENT_PROFILE values are stripped otherwise.
//   - --thinking: off low medium high xhigh max (max is sent as pi's xhigh).
//
// # Protocol drift
//
// Frames the plugin does not recognise become avenor.native events and are
// counted; every session.end carries unknown_frames (the session's count so
// far) and runtime_version, so a pi upgrade that changes the protocol shows.
package pi
