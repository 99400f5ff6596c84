package control

import "time"

// Bounds of the control socket's listener (issue 16: fd exhaustion).
const (
	// MaxConnections bounds the open connections of one control socket. A
	// harness needs a few (an owner, some subscribers) and every `avenor
	// await` or `avenor control` of an agent holds one while it runs; 128
	// is far above that and stays below half of 256, the smallest file
	// limit in common use (macOS's default), so a flood of connections
	// cannot take the descriptors plugins, logs and the owner's next
	// connection need. A connection over the cap is accepted, answered one
	// JSON-RPC error line (-32000, id null) and closed.
	MaxConnections = 128
	// AcceptBackoffMin is the first pause after a failed accept (EMFILE and
	// the like); each further failure doubles it up to AcceptBackoffMax. A
	// successful accept resets it. Without it a listener out of descriptors
	// spins a core and floods the log.
	AcceptBackoffMin = 5 * time.Millisecond
	// AcceptBackoffMax is the longest pause between failed accepts.
	AcceptBackoffMax = time.Second
	// AcceptLogInterval: failed accepts and refused connections are logged
	// at most once per interval each, with the number left unlogged since.
	AcceptLogInterval = 10 * time.Second
)
