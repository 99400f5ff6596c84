package fleet

import "time"

// Bounds of the fleet (rows in internal/docgen/bounds.go).
const (
	// ConnectTimeout bounds dialling the NATS servers of --fleet/--nats.
	ConnectTimeout = 5 * time.Second
	// SpawnAckWait is how long JetStream waits for a node's ack (or an
	// in-progress heartbeat) of a spawn before redelivering it to another
	// node: a node that dies while starting a runtime loses it to the
	// fleet after at most this long.
	SpawnAckWait = 15 * time.Second
	// HeartbeatInterval is how often a node tells JetStream a spawn it
	// took is still starting (in-progress ack), well inside SpawnAckWait.
	HeartbeatInterval = 2 * time.Second
	// PresenceInterval is how often a node refreshes its presence key.
	PresenceInterval = time.Second
	// PresenceTTL is how long a presence key lives without a refresh: a
	// node silent this long is lost and its runtimes move.
	PresenceTTL = 5 * time.Second
	// ReapInterval is how often each node looks for runtimes whose owner
	// lost its presence. Fail-over takes at most PresenceTTL +
	// ReapInterval + the time to start the resumed runtime.
	ReapInterval = time.Second
	// SpawnsInFlight bounds the spawns a node takes from the queue and
	// starts at once (never more than its supervisor's free slots).
	SpawnsInFlight = 4
	// ReapRescan is how often a node reads the whole registry for
	// runtimes to move even when no node was lost or came back since it
	// last found none.
	ReapRescan = 30 * time.Second
	// PullWait bounds one pull of the spawn queue and one capacity wait,
	// so a node notices its context ending promptly.
	PullWait = 2 * time.Second
	// PermissionMoveWait is how long an answer to a pending permission
	// waits, on the fleet socket, for a runtime whose node was lost to
	// raise the permission again on its new node.
	PermissionMoveWait = 45 * time.Second
	// RPCTimeout bounds one routed call (fleet socket → owning node).
	RPCTimeout = 30 * time.Second
	// ReadAttemptTimeout bounds one try of a read-only routed call
	// (status, result, history, list); a try without a reply — lost with a
	// NATS server that went away — is sent again, within RPCTimeout.
	ReadAttemptTimeout = 3 * time.Second
	// ReplyKeep is how long the replies bucket keeps a spawn's answer for
	// a requester whose connection was away when it was published.
	ReplyKeep = 15 * time.Minute
	// ReplyCheckFirst and ReplyCheckMax space a waiting spawn's reads of
	// the replies bucket (doubling from the first to the most); a
	// reconnect of the requester's connection reads it at once.
	ReplyCheckFirst = 2 * time.Second
	ReplyCheckMax   = 30 * time.Second
	// DefaultSpawnTimeout is how long a fleet spawn waits for a node to
	// start it (`avenor fleet serve --spawn-timeout`).
	DefaultSpawnTimeout = 10 * time.Minute
	// DefaultEventsMaxAge is how long the events stream keeps an event
	// (`--events-max-age`).
	DefaultEventsMaxAge = 7 * 24 * time.Hour
	// DefaultEventsMaxBytes bounds the events stream (`--events-max-bytes`).
	DefaultEventsMaxBytes = 1 << 30
	// RegistryRetry bounds how long a node retries a registry write that
	// fails for a lost server before it gives the spawn up.
	RegistryRetry = 30 * time.Second
	// SetupTimeout bounds how long a fleet member retries setting the
	// fleet's streams and buckets up while the cluster cannot answer yet
	// (its servers still electing a JetStream leader, or one of them just
	// lost): each try is JetStream's own request timeout.
	SetupTimeout = 30 * time.Second
	// DedupeWindow is the events stream's duplicate window: a node that
	// republishes an event after a reconnect within it stores it once.
	DedupeWindow = 2 * time.Minute
)
