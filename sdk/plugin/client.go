package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/plugin/internal/fromproto"
	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// ReceiveWindow is the host's gRPC flow-control window for a plugin, per
// session stream and for the whole connection: how many bytes of events a
// plugin may send ahead of what the host has read. gRPC's default (64 KiB,
// grown by probing pings) makes a flood's sender and receiver trade a
// window update and a ping every few batches; a fixed 1 MiB lets the
// stream run with few of either (measured 2026-12-02: 5-10 % of either side's CPU per
// event). A host reads its streams at once, so the window holds little
// for long; a host that cannot keep up holds a plugin back at this bound.
const ReceiveWindow = 1 << 20

// StderrLineBuffer is the buffer go-plugin reads a plugin's stderr with,
// one per running plugin for its whole life: a line up to this long is
// parsed as one of the plugin's log lines (with its level); a longer one is
// still kept whole in the stderr tail and logged, in pieces, at debug
// level. go-plugin's default (64 KiB) was the largest buffer a supervisor
// held per runtime: 12.5 MB of heap at 200 runtimes; a plugin's log lines
// (hclog's JSON) are a few hundred bytes.
const StderrLineBuffer = 4 << 10

// dialOptions are the host's options for its connection to a plugin.
// gRPC's shared write buffer (taken from a pool for each flush) saved no
// measurable heap per plugin and raised the p99 of an event's way to a
// subscriber (0.94 → 1.81 ms, medians of 6 interleaved rounds,
// 2026-12-04): not used.
func dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(ReceiveWindow), grpc.WithInitialConnWindowSize(ReceiveWindow)}
}

// LaunchConfig says how to start a plugin binary. The zero value of every
// field but Path is usable.
type LaunchConfig struct {
	// Path of the plugin binary. Required.
	Path string
	// Env is added to the host's environment for the plugin process.
	Env []string
	// Logger receives the plugin's logs, named after the plugin. Default: none.
	Logger hclog.Logger
	// SecureConfig, when set, is the checksum the binary must have: Path is
	// copied into a private directory, hashing the bytes copied, and the
	// copy runs only if they match, so a binary whose checksum differs never
	// executes, even if it is swapped in after the check. The copy is
	// removed once the process has started; the plugin's argv[0] is still
	// Path.
	SecureConfig *goplugin.SecureConfig
	// StartTimeout bounds the handshake. Default 30s.
	StartTimeout time.Duration
	// StderrTail is how many bytes of the plugin's raw stderr are kept for
	// crash reports. Default 16 KiB.
	StderrTail int
}

// Client is a running plugin as the host sees it.
type Client struct {
	info     Info
	path     string
	backends map[string]*remoteBackend
	order    []string
	logger   hclog.Logger
	gp       *goplugin.Client // nil when served in process
	stderr   *tailBuffer
	closeFn  func()

	exited  chan struct{}
	mu      sync.Mutex
	exitErr error
	pid     int
}

// Errors of launching.
var (
	ErrChecksumMismatch = errors.New("plugin checksum does not match its pin")
	ErrIncompatible     = errors.New("plugin speaks no protocol version this avenor speaks")
)

// Launch starts a plugin binary, completes the handshake and asks it to
// Describe itself. The caller must Kill the client.
func Launch(ctx context.Context, cfg LaunchConfig) (*Client, error) {
	if cfg.Path == "" {
		return nil, errors.New("launch plugin: no path given")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = 16 << 10
	}
	name := filepath.Base(cfg.Path)
	exe, removeCopy := cfg.Path, func() {}
	if cfg.SecureConfig != nil {
		copied, remove, err := verifiedCopy(cfg.Path, cfg.SecureConfig)
		if errors.Is(err, ErrChecksumMismatch) {
			return nil, fmt.Errorf("%w: %s", ErrChecksumMismatch, cfg.Path)
		}
		if err != nil {
			return nil, fmt.Errorf("verify plugin %s: %w", cfg.Path, err)
		}
		exe, removeCopy = copied, remove
	}
	defer removeCopy()
	c := &Client{path: cfg.Path, logger: cfg.Logger.Named(name), stderr: newTailBuffer(cfg.StderrTail), exited: make(chan struct{})}
	gp := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: pluginSets(&grpcPlugin{}),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  dialOptions(),
		Logger:           pluginLogger{Logger: c.logger, name: name},
		StartTimeout:     cfg.StartTimeout,
		Stderr:           c.stderr,
		// One buffer per plugin for its life: see StderrLineBuffer.
		PluginLogBufferSize: StderrLineBuffer,
		RunnerFunc: func(l hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
			markSocketDir(socketDir, l)
			cmd := exec.Command(exe)
			cmd.Args[0] = cfg.Path // a verified copy's process is still the plugin, by its own path
			cmd.Env = append(append([]string{}, spec.Env...), cfg.Env...)
			r, err := newProcRunner(cmd, c, newPluginTree(c.logger))
			if r != nil {
				r.name, r.started = cfg.Path, removeCopy
			}
			return r, err
		},
	})
	c.gp = gp
	rpc, err := gp.Client()
	if err != nil {
		gp.Kill()
		return nil, c.launchErr(err)
	}
	raw, err := rpc.Dispense(pluginSetKey)
	if err != nil {
		gp.Kill()
		return nil, c.launchErr(err)
	}
	if v := gp.NegotiatedVersion(); v != ProtocolVersion {
		gp.Kill()
		return nil, fmt.Errorf("%w: plugin %s negotiated protocol %d", ErrIncompatible, cfg.Path, v)
	}
	c.closeFn = gp.Kill
	if err := c.describeDispensed(ctx, raw); err != nil {
		gp.Kill()
		return nil, err
	}
	return c, nil
}

func (c *Client) launchErr(err error) error {
	msg := err.Error()
	if strings.Contains(strings.ToLower(msg), "incompatible api version") {
		return fmt.Errorf("%w: %s: %s; install a plugin built for avenor plugin protocol %d, or an avenor that speaks the plugin's version",
			ErrIncompatible, c.path, msg, ProtocolVersion)
	}
	if tail := c.stderr.String(); tail != "" {
		return fmt.Errorf("start plugin %s: %v (plugin stderr: %s)", c.path, err, lastLines(tail, 5))
	}
	return fmt.Errorf("start plugin %s: %w", c.path, err)
}

// runtimeClient is the generated Runtime client the host's backends call.
type runtimeClient struct{ pb.RuntimeClient }

// describeDispensed describes the Runtime client go-plugin dispensed.
func (c *Client) describeDispensed(ctx context.Context, raw any) error {
	return c.describe(ctx, raw.(pb.RuntimeClient))
}

// describeConn describes the Runtime service at the other end of conn.
func (c *Client) describeConn(ctx context.Context, conn grpc.ClientConnInterface) error {
	return c.describe(ctx, pb.NewRuntimeClient(conn))
}

func (c *Client) describe(ctx context.Context, rc pb.RuntimeClient) error {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := rc.Describe(dctx, toproto.Describe(ProtocolVersion))
	if err != nil {
		return c.describeErr("describe", err)
	}
	c.info = Info{Name: resp.GetPluginName(), Version: resp.GetPluginVersion()}
	c.backends = map[string]*remoteBackend{}
	for _, b := range resp.GetBackends() {
		info := fromproto.BackendInfo(b)
		c.backends[info.Name] = &remoteBackend{info: info, client: runtimeClient{rc}, owner: c}
		c.order = append(c.order, info.Name)
	}
	return nil
}

// Info is the plugin's name and version from Describe.
func (c *Client) Info() Info { return c.info }

// Path is the binary the plugin runs from ("in-process" when served in process).
func (c *Client) Path() string { return c.path }

// Backends lists the backends the plugin serves, in its order.
func (c *Client) Backends() []runtime.BackendInfo {
	out := make([]runtime.BackendInfo, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, c.backends[n].info)
	}
	return out
}

// Backend returns the named backend, false when the plugin does not serve it.
func (c *Client) Backend(name string) (runtime.Backend, bool) {
	b, ok := c.backends[name]
	return b, ok
}

// PID is the plugin process id (0 in process).
func (c *Client) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Exited is closed when the plugin process has exited.
func (c *Client) Exited() <-chan struct{} { return c.exited }

// ExitErr is how the plugin process ended (nil for a clean exit); valid
// after Exited is closed.
func (c *Client) ExitErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitErr
}

// Kill stops the plugin: gracefully (the plugin closes its sessions) with a
// short wait, then forcibly. Safe to call more than once.
func (c *Client) Kill() {
	if c.closeFn != nil {
		c.closeFn()
	}
}

// CrashReport is a short report for the user when the plugin panicked: the
// plugin, its version and the panic line. Empty when stderr shows no panic.
func (c *Client) CrashReport() string {
	tail := c.stderr.String()
	i := strings.Index(tail, "panic: ")
	if i < 0 {
		i = strings.Index(tail, "fatal error: ")
	}
	if i < 0 {
		return ""
	}
	line := tail[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return fmt.Sprintf("plugin %s %s crashed: %s", c.info.Name, c.info.Version, line)
}

// StderrTail is the last bytes the plugin wrote to stderr.
func (c *Client) StderrTail() string { return c.stderr.String() }

// goneErr describes a plugin that vanished mid-session, naming it and how
// it died.
func (c *Client) goneErr(doing string, cause error) error {
	select {
	case <-c.exited:
	case <-time.After(2 * time.Second):
		// The connection broke but the process has not been reaped yet.
	}
	how := "its connection closed"
	select {
	case <-c.exited:
		how = "it exited"
		if err := c.ExitErr(); err != nil {
			how = "it died (" + err.Error() + ")"
		}
	default:
		if cause != nil {
			how = "its connection failed (" + status.Convert(cause).Message() + ")"
		}
	}
	msg := fmt.Sprintf("plugin %s %s (%s) stopped during %s: %s", c.displayName(), c.info.Version, c.path, doing, how)
	if r := c.CrashReport(); r != "" {
		msg += "; " + r
	}
	return &goneError{err: &runtime.Error{Fault: runtime.FaultPlugin, Message: msg}}
}

// goneError is a plugin-fault *runtime.Error that also matches ErrPluginGone.
type goneError struct{ err *runtime.Error }

func (e *goneError) Error() string   { return e.err.Message }
func (e *goneError) Unwrap() []error { return []error{e.err, ErrPluginGone} }

// describeErr translates a gRPC error at the one boundary where transport
// errors become user text.
func (c *Client) describeErr(doing string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("plugin %s: %s: %w", c.displayName(), doing, err)
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled:
		return c.goneErr(doing, err)
	case codes.Unimplemented:
		return fmt.Errorf("plugin %s does not implement %s; it may be older than this avenor", c.displayName(), doing)
	}
	return fmt.Errorf("plugin %s: %s: %s", c.displayName(), doing, st.Message())
}

func (c *Client) displayName() string {
	if c.info.Name != "" {
		return "avenor-plugin-" + c.info.Name
	}
	return filepath.Base(c.path)
}

// SortedBackendNames is a convenience for listings.
func (c *Client) SortedBackendNames() []string {
	out := append([]string(nil), c.order...)
	sort.Strings(out)
	return out
}

// tailBuffer keeps the last n bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	n   int
	buf []byte
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{n: n} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

var _ io.Writer = (*tailBuffer)(nil)

// ReattachInfo is what a new host needs to reconnect to a running plugin
// process (go-plugin's ReattachConfig, as plain values a host can store).
type ReattachInfo struct {
	Network, Address string
	PID              int
	Protocol         string
	ProtocolVersion  int
}

// Reattach is the plugin process's reattach information; false in process
// or before the process has started.
func (c *Client) Reattach() (ReattachInfo, bool) {
	if c.gp == nil {
		return ReattachInfo{}, false
	}
	rc := c.gp.ReattachConfig()
	if rc == nil || rc.Addr == nil {
		return ReattachInfo{}, false
	}
	pid, version := rc.Pid, rc.ProtocolVersion
	if pid == 0 {
		pid = c.PID()
	}
	if version == 0 { // go-plugin leaves it out of a launched plugin's
		version = c.gp.NegotiatedVersion()
	}
	return ReattachInfo{Network: rc.Addr.Network(), Address: rc.Addr.String(), PID: pid,
		Protocol: string(rc.Protocol), ProtocolVersion: version}, true
}
