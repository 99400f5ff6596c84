// Package fleet places stable runtimes on many machines and keeps one place
// to spawn, watch, answer and cancel them (docs/fleet.md). It builds on NATS
// JetStream and owns no scheduler or transport of its own:
//
//   - Spawns go to a work-queue stream ([StreamSpawns], one subject per
//     pool). Node agents pull through one durable consumer per pool, only
//     when their supervisor has a free slot, and ack once the runtime's
//     session is open; a spawn taken by a node that dies is redelivered.
//     The node answers on the requester's inbox and keeps the answer in
//     [BucketReplies] (by the spawn's stream sequence, with a TTL), where
//     a requester whose connection was away when it was sent reads it.
//   - Events of every runtime go to [StreamEvents] on the subject
//     avenor.events.<node>.<rt> (the runtime's fleet id), with
//     <fleet id>/<seq> as the de-duplication id.
//   - The registry ([BucketRuntimes]: fleet id → owner node, status,
//     session, pending permission) and node presence ([BucketNodes], with
//     a TTL) live in JetStream KV. Ownership changes only by
//     compare-and-set on the key's revision, so a partitioned node can
//     never be a second owner.
//
// A node agent ([RunNode]) runs inside `avenor stable --fleet` and talks to
// its own supervisor only through the control client, over the
// supervisor's socket: stable itself does not know it is in a fleet. The
// fleet control server ([Gateway], `avenor fleet serve`) serves the control
// method table on a local socket and routes each call to the owning node by
// request/reply on avenor.node.<name>.rpc, so every control client works
// on a fleet unchanged. [StartDev] is the embedded single-server JetStream
// of `avenor fleet dev`, which admits only the keys it generates.
//
// Every stream, consumer and bucket name carries the schema version
// ([SchemaVersion]); [Setup] refuses one created by an incompatible
// version and says how to move on.
//
// Imported by cmd/avenor only.
package fleet
