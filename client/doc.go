// Package client is a Go client of avenor's control protocol (docs/control-protocol.md),
// for harness authors and for `avenor control` itself.
//
// An avenor started with `avenor run --control-socket PATH` (or `avenor
// stable --control-socket PATH`) listens on PATH for newline-delimited
// JSON-RPC 2.0. Dial it, then call methods:
//
//	c, err := client.Dial(ctx, "/run/user/1000/job.sock")
//	if err != nil { … }
//	defer c.Close()
//	st, err := c.Status(ctx)            // st.TurnState == "running", …
//	err = c.Prompt(ctx, "and now the tests")  // queued, runs after this turn
//	out, err := c.Result(ctx)           // final_output of the last session.end
//
// Events: Subscribe once per Client; every event then arrives on the
// subscription's channel in seq order. With Replay (and AfterSeq, the last
// seq you already processed) the buffered history comes first, without gaps
// or repeats, so a harness that reconnects loses nothing the server still
// holds (256 events per runtime; the --on-event NDJSON file is the complete
// record). Read the channel on its own goroutine: a consumer that falls 4096
// events behind loses the oldest and receives a subscriber.lagged event with
// dropped_count, exactly as a server-side lag is reported. Calls stay usable
// while events are pending.
//
// Ownership (docs/control-protocol.md#ownership): the first connection that calls a mutating
// method (Cancel, Prompt, InterruptAndPrompt, AnswerPermission, spawn,
// shutdown) owns the runtime until it disconnects; other connections get an
// *RPCError with code CodePermissionDenied (-32010). Keep one Client for
// mutations; Close waits (up to a second) until the server has let go of the
// connection, so a fresh Client may mutate right after. Read-only calls work
// on any connection.
//
// A stable supervisor (`avenor stable`) holds many runtimes: Spawn starts
// one and returns its runtime id (rt_1, rt_2, …) once its session is open;
// List and Runtime read the runtime entries; the per-runtime calls above
// take the runtime id as their last argument; Shutdown stops the
// supervisor. A full supervisor or tree refuses a spawn with a retryable
// capacity error: AsCapacity reads it.
//
// Await waits on a stable runtime until it needs attention or its run ends
// (`avenor await` is a thin command over it); FindRuntime finds the
// supervisor holding a run id or label among several sockets.
// SpawnParams matches the supervisor's spawn params field by field (a
// test pins them): an optional boolean or number is a pointer (Bool, Int),
// so false or 0 can override a config saying otherwise.
//
// Dial checks who it reached before it sends a byte: the socket file and
// the process serving it (SO_PEERCRED) must be this user's, or root's with
// AVENOR_CONTROL_TRUST_ROOT=1 (EnvTrustRoot); otherwise it fails with
// ErrUntrustedSocket naming the owner. A socket in a shared directory like
// /tmp may have been created by another user first.
//
// Errors from the server are *RPCError values (use errors.As); a one-shot run
// answers stable-only methods with CodeMethodNotFound. When the server goes
// away, pending calls fail with ErrClosed and the subscription's channel is
// closed.
package client
