package httpdebug

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// overCapLog: connections over the cap are logged at most once per
// interval, with the number left unlogged.
const overCapLog = 10 * time.Second

// overCapBody answers a connection over MaxConnections.
var overCapBody = fmt.Sprintf("too many http debug connections: %d are open (the limit, httpdebug.MaxConnections); close one and retry\n", MaxConnections)

var overCapResponse = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(overCapBody)) + "\r\n\r\n" + overCapBody)

// capListener holds at most cap(slots) connections open. One over the cap
// is answered 503 and closed at once rather than left waiting in the
// backlog: its client learns why, and no descriptor is held for it.
type capListener struct {
	net.Listener
	slots chan struct{}
	log   hclog.Logger

	// Accept is called by one goroutine (http.Server.Serve).
	lastLog    time.Time
	suppressed int
}

func newCapListener(ln net.Listener, n int, log hclog.Logger) *capListener {
	return &capListener{Listener: ln, slots: make(chan struct{}, n), log: log}
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err // http.Server backs off on temporary errors
		}
		select {
		case l.slots <- struct{}{}:
			return &capConn{Conn: c, slots: l.slots}, nil
		default:
			l.refuse(c)
		}
	}
}

// refuse answers c 503 and closes it. The connection is fresh: the
// response fits its send buffer, so the write does not wait; the deadline
// only guards the accept loop.
func (l *capListener) refuse(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, _ = c.Write(overCapResponse)
	c.Close()
	now := time.Now()
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < overCapLog {
		l.suppressed++
		return
	}
	args := []any{"open", cap(l.slots), "peer", c.RemoteAddr().String()}
	if l.suppressed > 0 {
		args = append(args, "repeated", l.suppressed)
	}
	l.log.Warn("refused an http debug connection: too many open", args...)
	l.lastLog, l.suppressed = now, 0
}

// capConn gives its slot back when it is closed, once.
type capConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

// refuse answers a refused request and closes its connection: a peer that
// is refused must not keep the connection (and its descriptor) for more
// tries.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	httpError(w, code, msg)
}
