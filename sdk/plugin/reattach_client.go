package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/avenor-go/avenor/sdk/plugin/internal/toproto"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// The host side of a take-over: a host reconnects to a plugin process that
// outlived its previous host (Reattach) and takes a lingering session over
// (Reattacher).

// exitPoll is how often a re-attached plugin process is checked for exit:
// it is not our child, so no wait tells us.
const exitPoll = 200 * time.Millisecond

// Reattach connects to a running plugin process that an earlier host
// launched (ReattachInfo, as Client.Reattach gave it) and asks it to
// Describe itself. The caller must Kill the client. path names the plugin
// in messages; log receives its logs.
func Reattach(ctx context.Context, info ReattachInfo, path string, log hclog.Logger) (*Client, error) {
	if info.PID <= 1 || info.Address == "" {
		return nil, errors.New("reattach plugin: no pid or address")
	}
	if info.ProtocolVersion != ProtocolVersion {
		return nil, fmt.Errorf("%w: plugin pid %d speaks protocol %d", ErrIncompatible, info.PID, info.ProtocolVersion)
	}
	var addr net.Addr
	switch info.Network {
	case "unix":
		addr = &net.UnixAddr{Name: info.Address, Net: "unix"}
	case "tcp":
		a, err := net.ResolveTCPAddr("tcp", info.Address)
		if err != nil {
			return nil, fmt.Errorf("reattach plugin pid %d: %w", info.PID, err)
		}
		addr = a
	default:
		return nil, fmt.Errorf("reattach plugin pid %d: network %q", info.PID, info.Network)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	name := filepath.Base(path)
	c := &Client{path: path, logger: log.Named(name), stderr: newTailBuffer(1 << 10), exited: make(chan struct{}), pid: info.PID}
	gp := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          pluginSets(&grpcPlugin{})[ProtocolVersion],
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		GRPCDialOptions:  dialOptions(),
		Logger:           pluginLogger{Logger: c.logger, name: name},
		Reattach: &goplugin.ReattachConfig{
			Protocol: goplugin.Protocol(info.Protocol), ProtocolVersion: info.ProtocolVersion, Addr: addr, Pid: info.PID,
		},
	})
	c.gp = gp
	rpc, err := gp.Client()
	if err != nil {
		gp.Kill()
		return nil, fmt.Errorf("reattach plugin pid %d at %s: %w", info.PID, info.Address, err)
	}
	raw, err := rpc.Dispense(pluginSetKey)
	if err != nil {
		gp.Kill()
		return nil, fmt.Errorf("reattach plugin pid %d: %w", info.PID, err)
	}
	c.closeFn = gp.Kill
	if err := c.describeDispensed(ctx, raw); err != nil {
		gp.Kill()
		return nil, err
	}
	go func() {
		t := time.NewTicker(exitPoll)
		defer t.Stop()
		for range t.C {
			if gp.Exited() {
				close(c.exited)
				return
			}
		}
	}()
	return c, nil
}

// Reattached is what a take-over found of the session.
type Reattached struct {
	// TurnID is the session's last turn; TurnRunning says it still runs
	// (its TurnEnded, else, is among what follows).
	TurnID      string
	TurnRunning bool
	// BufferedEvents were kept while the plugin had no host; Gap is how
	// long it had none.
	BufferedEvents int
	Gap            time.Duration
}

// Reattacher is a backend served by a plugin process that can hand a
// lingering session to a new host. Every backend of a Client is one.
type Reattacher interface {
	// Reattach takes over the session with id sessionID: what the plugin
	// kept and what follows go to host, first an
	// avenor.supervisor.reattached event. A Prompt naming the turn in
	// flight (Reattached.TurnID) does not start it again: it waits for its
	// end. The events the plugin last sent to the old host come first:
	// written, returns how many of them, oldest first, the host's log has
	// already (nil: none); the rest are delivered.
	Reattach(ctx context.Context, sessionID string, host runtime.Host, written func([]runtime.Event) int) (runtime.Session, Reattached, error)
}

var _ Reattacher = (*remoteBackend)(nil)

func (b *remoteBackend) Reattach(ctx context.Context, sessionID string, host runtime.Host, written func([]runtime.Event) int) (runtime.Session, Reattached, error) {
	streamCtx, cancel := context.WithCancel(context.Background())
	stream, err := b.client.Session(streamCtx, grpc.ForceCodecV2(newRecvCodec()))
	if err != nil {
		cancel()
		return nil, Reattached{}, b.owner.describeErr("reattach session", err)
	}
	s := newRemoteSession(b.owner, stream, cancel, host)
	s.written = written
	if err := s.send(toproto.ReattachSession(sessionID)); err != nil {
		cancel()
		return nil, Reattached{}, b.owner.describeErr("reattach session", err)
	}
	go s.recvLoop()
	select {
	case o := <-s.opened:
		s.id = o.SessionID
		s.setProcess(o.Process)
		r := Reattached{TurnID: o.TurnID, TurnRunning: o.TurnRunning, BufferedEvents: int(o.BufferedEvents), Gap: time.Duration(o.GapMs) * time.Millisecond}
		s.mu.Lock()
		s.adopted = r.TurnID
		s.mu.Unlock()
		return s, r, nil
	case err := <-s.closed:
		cancel()
		<-s.done
		if err != nil {
			return nil, Reattached{}, err
		}
		return nil, Reattached{}, runtime.Errorf(runtime.FaultPlugin, "plugin closed the session instead of handing it over")
	case <-s.done:
		cancel()
		return nil, Reattached{}, s.goneErr("reattach session")
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, Reattached{}, ctx.Err()
	}
}
