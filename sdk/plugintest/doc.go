// Package plugintest is the conformance kit for avenor backend plugins: it
// checks a plugin against the runtime contract over the real gRPC wire, the
// way the avenor host uses it, and holds each backend to the capabilities it
// advertises in Describe.
//
// A plugin's tests call it in one line:
//
//	func TestConformance(t *testing.T) {
//		plugintest.Run(t, plugintest.Harness{
//			Plugin:   plugin.Info{Name: "echo", Version: echo.Version},
//			Backends: []runtime.Backend{echo.New()},
//		})
//	}
//
// Run serves the backends in process over real gRPC (plugin.ServeInProcess);
// RunBinary does the same against a built plugin binary, which also checks
// what only a process can show (a crash mid-turn, a fresh process resuming a
// session). Verify and VerifyBinary are the error-returning variants for
// non-test callers; `avenor plugin verify <binary>` prints VerifyBinary's
// Report.
//
// The checks are grouped in tiers and named after the behaviour they check,
// so a failure says what is wrong ("echo/session/cancel_ends_the_turn_promptly"):
//
//   - handshake: Describe names the plugin and its version, the binary is
//     named after its family and explains itself when started by hand;
//   - describe: each backend's capabilities, resume scope, thinking levels
//     and event types are well formed, and Check answers;
//   - session: open, prompt, event ordering, declared event types, cancel
//     (also one sent right after Prompt, before the backend may have begun
//     the turn: it must be kept for that turn), close;
//   - permission: a request reaches the host and allow, reject and
//     cancelled answers end the turn as they should;
//   - resume: a session continues by id, an unknown id is refused, a fresh
//     plugin process resumes a cross_process session;
//   - restart: a plugin that dies mid-turn ends the turn rather than hanging
//     it, and a fresh plugin serves (and resumes) afterwards.
//
// Optional capabilities are probed, not assumed: a check that needs resume,
// cancel or permission relay is skipped when the backend does not advertise
// it and fails, naming the behaviour, when it advertises it and does not
// deliver. A capability advertised as "unverified" is probed too, and a
// failure is reported as a skip that says so.
//
// The kit cannot know how to make a given runtime do things, so a Harness
// says it: which prompt runs a short turn, a long one (so that a Cancel
// lands mid-turn), and one that asks a permission. DefaultPrompt suits echo
// and agents driven by a language model.
package plugintest
