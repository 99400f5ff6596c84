// Package event owns the host's event stream (contract §2): the event type,
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
// the final_output rules of §2.1.
//
// The log lines are encoded by sdk/jsonenc, byte for byte what
// json.Encoder wrote before it (the old encoder is the tests' oracle). A
// Writer made with Options.Batched hands its lines to a goroutine that
// writes them many to a system call and exists only while lines wait: the
// runtime's own writer uses it (issue 11); its owner flushes before the
// sentinel. A subscriber that writes events out takes them in batches with
// Subscription.Receive.
//
// Imported by host/runtime, host/loop, host/control and host/stable. It
// depends on the standard library and sdk/jsonenc only.
package event
