// Package scripted is a test backend whose every turn is driven by a small
// script: host tests, the conformance kit and benchmarks use it to make a
// plugin do exactly one thing — stream, stall, ask, fail, crash, spawn a
// runtime process — on demand. Its binary is cmd/avenor-plugin-scripted,
// serving the backend "scripted". It is not a template for real plugins; see
// sdk/examples/echo for that.
//
// # The script
//
// A prompt is the script; a prompt of the form "@file:/abs/path" runs the
// script in that file instead. One command per line; blank lines and lines
// starting with # are ignored. Parse reads a script into Steps, and any
// error — an unknown command, a bad argument — names its line and ends the
// turn with a user-fault error before anything runs.
//
// Arguments are separated by spaces; "double quoted" parts are Go string
// literals, so they may hold spaces and escapes. Where a command takes a
// <text>, the text is the rest of the line as written, or, when the rest of
// the line is one double-quoted literal, that literal unquoted (so
// `say "[loop: exit]\n"` prints a newline).
//
//	say <text>                    one agent.message_chunk
//	think <text>                  one agent.thought_chunk
//	chunks <n> [every=<d>] [text=<t>]
//	                              n message chunks, <d> apart (a Go duration,
//	                              default 0); each is <t>, or "chunk <i>\n"
//	flood <n>                     n message chunks "x", as fast as possible
//	sleep <d>                     stay silent for <d>; Cancel ends it early
//	tool <title> [kind=<k>]       tool.call (pending) then tool.call_update
//	                              (completed); kind defaults to "other"
//	toolproc <mode> [n=<count>] [for=<d>]
//	                              n tool calls at once (default 1, at most
//	                              256), each tool.call in_progress with a
//	                              process of its own (its own process
//	                              group, a child of the plugin) living
//	                              <d> (default 10m), then tool.call_update
//	                              completed (failed when it exited non-zero);
//	                              Cancel kills them. Modes: idle (`sleep`),
//	                              grandchild (`sh -c "sleep <d>; :"`, a shell
//	                              waiting on a stuck grandchild), busy-cpu
//	                              (burns ~5% of a core), busy-io (writes 4 KiB
//	                              to /dev/null every 100 ms, next to no CPU),
//	                              busy (busy-cpu and busy-io by turns),
//	                              none (no process: the call just lasts <d>).
//	                              The busy modes run this package's binary
//	                              again as the busy process
//	permission [tool=<t>] [question=<q>] [options=<id>:<kind>,...] [user_input=true]
//	                              ask the host; default options
//	                              allow:allow_once,deny:reject. Then says
//	                              "permission <option> (<kind>)", or
//	                              "permission cancelled" and ends the turn
//	                              cancelled
//	question <text> [options=<a>|<b>...] [multi=true] [and=<text>]
//	                              ask the user (a question, not a
//	                              permission): one prompt with its options,
//	                              and with and= a second free-text prompt.
//	                              Then says "answer <JSON of the answers>",
//	                              or "no answer" when the host gave up or
//	                              the session was not opened with questions
//	                              (then nothing is asked)
//	images                        says "image <media type> <n> bytes" for each
//	                              image that came with the prompt (read from
//	                              its file), then "<n> images"
//	usage in=<n> out=<n> [cost=<usd>] [window=<n>]
//	                              the usage reported when the turn ends; with
//	                              cost, its cost_usd (spend limits); with
//	                              window, the context use: in of window,
//	                              less what compactions of the session
//	                              dropped (a compaction keeps a quarter)
//	stop <reason>                 end the turn now with that stop reason
//	fail <text>                   end the turn with a runtime-fault error
//	ratelimit <reset> [times=<n>] end the turn with a rate_limited error
//	                              (runtime.RateLimited) whose reset is <reset>
//	                              (a Go duration from now, or an RFC 3339
//	                              time), the first n times (default 1) the
//	                              session reaches a ratelimit step — counted
//	                              in scripted-ratelimits.json beside the
//	                              sessions, so across resumes; after that the
//	                              step does nothing and the script goes on
//	account <window> <pct> <in>   an avenor.usage.account event: window
//	                              <window> used <pct> percent, resetting <in>
//	                              (a Go duration) from now
//	error <text>                  an avenor.error{source:"backend"} event, as
//	                              codex reports a failure; the turn goes on
//	write <relpath> <text>        write a file under the session directory
//	shell <command...>            run /bin/sh -c in the session directory;
//	                              its stdout becomes one message chunk, a
//	                              non-zero exit fails the turn
//	lines <command...>            run /bin/sh -c through agentproc like a
//	                              runtime: each stdout line one message chunk,
//	                              a line over the bound an avenor.warning;
//	                              inside the Open's sandbox when it has one
//	                              (shell then refuses to run)
//	toolsh <command...>           a tool call (kind execute) whose tool is
//	                              /bin/sh -c through agentproc, like lines
//	                              (inside the Open's sandbox when it has
//	                              one): tool.call in_progress, then
//	                              tool.call_update completed (failed on a
//	                              non-zero exit) with rawOutput {output:
//	                              its stdout and stderr, then the
//	                              launcher's stderr}
//	child <seconds>               start `sleep <seconds>` in its own process
//	                              group as the session's runtime process (see
//	                              below)
//	die                           SIGKILL this plugin process, 100ms after
//	                              the previous step so its events reach the
//	                              host
//	ignore-cancel                 from here on this turn ignores Cancel (it
//	                              still stops when the session closes)
//	announce                      the turn first says "turn <N>" (N counts
//	                              the session's turns, across resumes)
//
// A script that runs to its end ends the turn with end_turn and the usage
// set by `usage` (none otherwise). The backend never sets a final output:
// the host synthesises it from the message chunks.
//
// # Sessions and processes
//
// Session ids look like scr_<hex>. Sessions and their turn counts are kept in
// scripted-sessions.json in the OpenRequest's StateDir, so a fresh plugin
// process resumes them (ResumeScope cross_process); an unknown resume id is a
// user-fault "not found" error. With SCRIPTED_RESUME_SCOPE=in_process in the
// plugin's environment (or NewInProcess) the backend claims resume scope
// in_process and resumes only the sessions its own process opened, like a
// backend whose sessions live in memory.
//
// `child` reports the new process through the host's optional
// runtime.ProcessRecorder and from Session.Process; Close kills its process
// group. If the environment (OpenRequest.Env first, then the plugin's own)
// sets SCRIPTED_CHILD_PIDFILE, the child's pid is written to that file.
//
// A prompt that is not a script fails the turn with a user-fault error,
// unless SCRIPTED_PROSE_SCRIPT (OpenRequest.Env first, then the plugin's
// own) holds a script: that script runs instead, as the turn after a
// host's note to the agent (a watchdog restart's) would.
//
// Open's options: {"fail_open": "<message>"} makes Open fail with a
// runtime-fault error carrying the message; {"not_ready": "<message>"}
// makes Check report the runtime unusable (auth missing) with that message,
// as a backend whose CLI is missing does. --thinking accepts low, medium
// and high.
package scripted
