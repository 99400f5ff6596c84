package board

import (
	"time"

	"github.com/hashicorp/go-hclog"
)

// Bounds of the board (docs/configuration.md#bounds).
const (
	// DialTimeout bounds dialling one control socket and each control call
	// a route makes; a socket that does not answer in time is skipped by
	// /api/sockets and is a 502 elsewhere.
	DialTimeout = 2 * time.Second
	// MaxStreams bounds the /api/events streams open at once: each holds a
	// control connection. One more is answered 503.
	MaxStreams = 64
	// MaxBodyBytes bounds a POST body; a prompt's own bound is the
	// supervisor's (MaxPromptBytes), this one only keeps a body in memory
	// small enough.
	MaxBodyBytes = 1 << 20
	// MaxSockets bounds the sockets /api/sockets reports, in name order;
	// more are cut and the answer says how many were left out.
	MaxSockets = 256
	// StreamKeepAlive is how often an idle SSE stream sends a comment, so
	// proxies and the browser keep it open and a gone client is noticed.
	StreamKeepAlive = 15 * time.Second
	// MaxConnections bounds the HTTP connections open at once, counted
	// before any request is read (host/connlimit): one more is answered
	// 503 and closed. MaxConnectionsPerPeer bounds those of one other
	// local user (loopback, where the kernel tells the uid), and the last
	// ReservedConnections are kept for the user who started the board,
	// so a flood without the token never locks its owner out.
	MaxConnections        = 128
	MaxConnectionsPerPeer = 32
	ReservedConnections   = 16
	// ReadHeaderTimeout bounds a request's headers; IdleTimeout closes a
	// keep-alive connection without a new request.
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 30 * time.Second
	// DefaultStallAfter is when a running runtime without a new event
	// counts as stalled ("waiting for you") on the page.
	DefaultStallAfter = 5 * time.Minute
)

// Config configures Start. The zero value serves the sockets in
// ~/.avenor/sockets on a random loopback port with a random token,
// read-only.
type Config struct {
	// Addr is host:port to listen on. Default "127.0.0.1:0" (a free port).
	// A non-loopback address needs Token or NoAuth.
	Addr string
	// Scan lists the directories whose *.sock files are the sockets shown.
	// Default: ~/.avenor/sockets (Home must then be set). Ignored when
	// Socket is set.
	Scan []string
	// Socket, when set, is the only socket shown; it overrides Scan,
	// Sockets and StateDir.
	Socket string
	// Sockets are shown besides those of Scan (the AVENOR_SOCKET of whoever
	// started the board). Default none.
	Sockets []string
	// StateDir is avenor's state directory: the supervisors recorded
	// there (host/suprecord) are shown besides those of Scan, wherever
	// their sockets are. Default "": none.
	StateDir string
	// Token is the API token. Empty: a random 16-byte hex token (read it
	// from Server.Token). Conflicts with NoAuth.
	Token string
	// NoAuth serves the API without a token: only for a trusted network.
	// Conflicts with Token.
	NoAuth bool
	// AllowMutations enables every POST route (cancel, prompt, answer);
	// without it they answer 403 and the page shows no buttons.
	AllowMutations bool
	// StallAfter is DefaultStallAfter when zero.
	StallAfter time.Duration
	// Home expands "~" in Scan and gives the default scan directory.
	Home string
	// Logger receives the board's own log lines (never the token). Default:
	// none.
	Logger hclog.Logger
}
