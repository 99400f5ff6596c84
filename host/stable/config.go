package stable

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	hostrun "github.com/avenor-go/avenor/host/run"
)

// Defaults of Config (docs/stable.md#limits).
const (
	DefaultMaxRuntimes     = 16
	DefaultMaxTreeBudget   = 64
	DefaultParkedTimeout   = 30 * time.Minute
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultMaxKeptPlugins bounds the plugin processes parked runtimes
	// keep running (Config.MaxKeptPlugins).
	DefaultMaxKeptPlugins = 8
)

// Config configures a Supervisor. Zero values are usable defaults except
// SocketPath and Resolve, which are required.
type Config struct {
	// SocketPath is the control socket; the tombstone is <SocketPath>.dead.
	// Required.
	SocketPath string
	// MaxRuntimes bounds the runtimes executing at once; parked runtimes do
	// not count. <= 0: DefaultMaxRuntimes.
	MaxRuntimes int
	// MaxTreeBudget is the whole tree's executing-runtime budget, used when
	// this supervisor is the root of its tree (no TreeBudgetPath).
	// <= 0: DefaultMaxTreeBudget.
	MaxTreeBudget int
	// IdleTimeout ends the supervisor (reason idle) once no runtime has been
	// executing and no control client connected for this long. 0: never.
	IdleTimeout time.Duration
	// ParkedTimeout is how long a finished runtime stays parked for
	// follow-ups before it is reaped. 0: until shutdown (the command's
	// default is DefaultParkedTimeout).
	ParkedTimeout time.Duration
	// ShutdownTimeout is how long a graceful shutdown waits for the
	// cancelled runtimes before killing their plugins. <= 0:
	// DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// PermissionClaimTimeout is avenor run's --permission-claim-timeout for
	// every runtime. 0: no deadline.
	PermissionClaimTimeout time.Duration
	// PermissionFileTimeout replaces the file handler's 10 min timeout; 0:
	// the contract's.
	PermissionFileTimeout time.Duration
	// Warm asks for warm pools (`--warm`): runtimes started, initialised
	// and with a fresh session open before a spawn asks for one. Each spec
	// is resolved in New; one that does not resolve fails New.
	Warm []WarmSpec
	// WarmIdle stops a pool's members when no spawn took from it for this
	// long (`--warm-idle`); 0: they stay until shutdown.
	WarmIdle time.Duration
	// MaxKeptPlugins bounds the parked runtimes that keep their plugin
	// running: for a fast follow-up (cross_process backends), or because
	// their session lives nowhere else (in_process). Beyond it the
	// longest-parked cross_process runtime's plugin stops, and its next
	// follow-up resumes in a fresh plugin; only when none is left does the
	// longest-parked in_process one's, whose session is then lost.
	// <= 0: DefaultMaxKeptPlugins.
	MaxKeptPlugins int

	// RunID is the supervisor's run id: its artifact directory and, as the
	// root of a tree, the tree's root_id. Default: 16 random hex digits.
	RunID string
	// TempDir holds the default artifacts,
	// <TempDir>/avenor-stable/<RunID>/<runtime_id>/. Default os.TempDir().
	TempDir string
	// Home is the user's home: the root of a tree creates its budget file
	// in <Home>/.avenor/sockets. "" with no TreeBudgetPath: the tree budget
	// runs degraded (local limit only).
	Home string
	// TreeBudgetPath is the inherited tree budget file (AVENOR_TREE_BUDGET):
	// this supervisor is a nested one. "": it is the root of a new tree.
	TreeBudgetPath string
	// SpendLedgers are the spend ledgers of the tree-scoped runtimes this
	// supervisor runs under (AVENOR_SPEND_LEDGER): its runtimes' spending
	// adds to them. "": none.
	SpendLedgers string

	// StateDir is the supervisor's durable state directory (one per control
	// socket, StateDirFor): state.json there lets a supervisor started on
	// the same socket after this one died recover its runtimes. "": no
	// durable state.
	StateDir string
	// Linger is how long this supervisor's plugins keep their runtimes
	// alive after losing it (killed, crashed), waiting for a supervisor on
	// the same socket to take them over, before they stop them. 0: they
	// stop them at once.
	Linger time.Duration

	// Resolve turns a spawn's settings into its backend: config layering
	// and plugin discovery, as avenor run does them. Required.
	Resolve Resolver

	// IdentityToken is what the identity method answers; default "".
	IdentityToken string
	// Ready is called once the socket listens; default nothing.
	Ready func()
	// Logger receives diagnostics; default none.
	Logger hclog.Logger
	// Stderr receives one-line messages for the user; default discard.
	Stderr io.Writer
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Resolver resolves a spawn (host/run's), and Backend is what it
// resolves to: the layered settings and the backend they name.
type (
	Resolver = hostrun.Resolver
	Backend  = hostrun.SpawnBackend
)

func (c *Config) defaults() {
	if c.MaxRuntimes <= 0 {
		c.MaxRuntimes = DefaultMaxRuntimes
	}
	if c.MaxTreeBudget <= 0 {
		c.MaxTreeBudget = DefaultMaxTreeBudget
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxKeptPlugins <= 0 {
		c.MaxKeptPlugins = DefaultMaxKeptPlugins
	}
	if c.RunID == "" {
		c.RunID = NewRunID()
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Stderr == nil {
		c.Stderr = io.Discard
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// NewRunID returns 16 random lowercase hex digits, the form of run ids.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
