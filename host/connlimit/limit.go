package connlimit

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Timeouts Harden gives an http.Server that sets none: a peer may take
// ReadHeaderTimeout to send a request's headers, and a keep-alive
// connection with no new request is closed after IdleTimeout.
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 30 * time.Second
)

// logEvery: refusals are logged at most once per interval, with the count
// left unlogged.
const logEvery = 10 * time.Second

// Config says how many connections a listener may hold.
type Config struct {
	// Max is the most connections open at once (required, > 0).
	Max int
	// MaxPerPeer is the most connections one peer uid other than this
	// process's may hold, where the kernel tells the uid. 0: no per-peer
	// cap.
	MaxPerPeer int
	// Reserve is how many of the Max slots only this process's own uid
	// may take: other users' peers, and peers whose uid is unknown, are
	// refused once Max-Reserve are open. 0: none reserved.
	Reserve int
	// What names the listener in the refusal and the log ("http debug",
	// "board", "mcp http").
	What string
	// Limit and PeerLimit name the constants of Max and MaxPerPeer, so a
	// refused client learns what to read about.
	Limit, PeerLimit string
	// Log receives the refusals (rate-limited). Default none.
	Log hclog.Logger
	// peerUID finds a connection's peer uid; tests replace it.
	peerUID func(net.Conn) (int, bool)
}

// Wrap returns ln holding at most cfg's connections.
func Wrap(ln net.Listener, cfg Config) net.Listener {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if cfg.peerUID == nil {
		cfg.peerUID = PeerUID
	}
	if cfg.Reserve >= cfg.Max {
		cfg.Reserve = cfg.Max - 1
	}
	return &listener{Listener: ln, cfg: cfg, me: os.Geteuid(), byUID: map[int]int{}}
}

// Harden sets hs's ReadHeaderTimeout and IdleTimeout where they are zero.
func Harden(hs *http.Server) *http.Server {
	if hs.ReadHeaderTimeout == 0 {
		hs.ReadHeaderTimeout = ReadHeaderTimeout
	}
	if hs.IdleTimeout == 0 {
		hs.IdleTimeout = IdleTimeout
	}
	return hs
}

type listener struct {
	net.Listener
	cfg Config
	me  int

	mu     sync.Mutex
	open   int         // connections held
	others int         // of them, not this uid's (other users', unknown)
	byUID  map[int]int // held per other uid

	// Accept is called by one goroutine (http.Server.Serve).
	lastLog    time.Time
	suppressed int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err // http.Server backs off on temporary errors
		}
		uid, known := -1, false
		if l.cfg.MaxPerPeer > 0 || l.cfg.Reserve > 0 {
			uid, known = l.cfg.peerUID(c)
		}
		own := known && uid == l.me
		if why := l.admit(uid, known, own); why != "" {
			l.refuse(c, why, uid, known)
			continue
		}
		return &conn{Conn: c, l: l, uid: uid, known: known, own: own}, nil
	}
}

// admit takes a slot for a peer, or says which cap refuses it.
func (l *listener) admit(uid int, known, own bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open >= l.cfg.Max:
		return fmt.Sprintf("too many %s connections: %d are open (the limit, %s); close one and retry\n", l.cfg.What, l.cfg.Max, l.cfg.Limit)
	case !own && l.cfg.Reserve > 0 && l.others >= l.cfg.Max-l.cfg.Reserve:
		return fmt.Sprintf("too many %s connections of other users: the last %d of %d are kept for the user who started it (%s); close one and retry\n", l.cfg.What, l.cfg.Reserve, l.cfg.Max, l.cfg.Limit)
	case !own && known && l.cfg.MaxPerPeer > 0 && l.byUID[uid] >= l.cfg.MaxPerPeer:
		return fmt.Sprintf("too many %s connections of uid %d: %d are open (the limit per other user, %s); close one and retry\n", l.cfg.What, uid, l.cfg.MaxPerPeer, l.cfg.PeerLimit)
	}
	l.open++
	if !own {
		l.others++
		if known {
			l.byUID[uid]++
		}
	}
	return ""
}

func (l *listener) release(uid int, known, own bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !own {
		l.others--
		if known {
			if l.byUID[uid]--; l.byUID[uid] <= 0 {
				delete(l.byUID, uid)
			}
		}
	}
}

// refuse answers c 503 and closes it. The connection is fresh: the
// response fits its send buffer, so the write does not wait; the deadline
// only guards the accept loop.
func (l *listener) refuse(c net.Conn, body string, uid int, known bool) {
	resp := "HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write([]byte(resp))
	c.Close()
	now := time.Now()
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < logEvery {
		l.suppressed++
		return
	}
	args := []any{"max", l.cfg.Max, "peer", c.RemoteAddr().String()}
	if known {
		args = append(args, "uid", uid)
	}
	if l.suppressed > 0 {
		args = append(args, "repeated", l.suppressed)
	}
	l.cfg.Log.Warn("refused a connection to the "+l.cfg.What+" listener: too many open", args...)
	l.lastLog, l.suppressed = now, 0
}

// conn gives its slot back when it is closed, once.
type conn struct {
	net.Conn
	l          *listener
	uid        int
	known, own bool
	once       sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.uid, c.known, c.own) })
	return err
}
