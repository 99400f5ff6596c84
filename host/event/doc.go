// Package event owns the host's event stream (docs/events.md): the event type,
// the stamping of the standard fields (seq, ts, run_id, run_label,
// runtime_id, session_id), the exact NDJSON encoding of the --on-event log,
// the in-memory history ring used for replay, and the fan-out to live
// subscribers with subscriber.lagged notices.
//
// One [Writer] belongs to one runtime: it is the single place where seq is
// assigned, so the order of seq, the order of lines in the file and the order
// seen by every subscriber are the same. A slow subscriber loses its oldest
// queued events and is told how many; it never blocks the runtime or the
// other subscribers.
//
// [HostEventTypes] documents every event type the host itself emits; events
// from plugins pass through unchanged. [FinalOutput] and [Truncate] implement
// the final_output rules of docs/events.md#the-envelope.
//
// The log lines are encoded by sdk/jsonenc, byte for byte what
// json.Encoder wrote before it (the old encoder is the tests' oracle).
// Plugin events are not decoded at all: ScanFields checks that a
// plugin's JSON is already canonical and finds the few members the host
// reads, and WriteFields stamps the line by splicing, byte for byte the line
// Write writes for the decoded map (FuzzWriteFields); subscribers get the
// event decoded only when they read it, or its line (ReceiveItems).
// Every Writer hands its lines to a bounded queue (MaxQueuedLogBytes) and a
// goroutine that writes them many to a system call and exists only while
// lines wait; the log is never written under the Writer's lock, so a log
// that blocks cannot hold up control, signals or other runtimes.
// With Options.Batched, Write returns once its line is queued — the
// runtime's own writer, whose owner flushes before the sentinel;
// without it Write waits for its line. A write that does not return within
// MaxWriteStall, or fails, fails the log for good: Failed is closed and the
// owner ends its run FAILED, while history and subscribers go on. A
// subscriber that writes events out takes them in batches with
// Subscription.Receive; one that follows many subscriptions (every
// runtime of a supervisor) attaches them to a [Ready], waits on it, and
// takes each ready one's queue with Subscription.TakeItems — one goroutine
// for all of them.
//
// A supervisor keeps a Writer per runtime, so what one holds is kept
// small and flat: the history's lines are stored compact in one arena
// (the envelope members that repeat kept once), a subscription's queue
// grows with the traffic and is given back once drained, the log's
// queues of all writers share one bound (MaxQueuedLogBytesTotal), and a
// parked or closed writer gives back whatever was sized for a burst
// (IdleWriterBytes, IdleSubscriptionBytes).
//
// Imported by host/runner, host/loop, host/control and host/stable. It
// depends on the standard library and sdk/jsonenc only.
package event
