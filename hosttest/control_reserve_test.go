package hosttest

import (
	"bufio"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/control"
)

// TestControlReserveForOtherProcesses: one client process that opens more
// connections than the socket's cap (as `avenor mcp` did with one per
// wait) holds control.MaxConnectionsPerProcess of them and is refused the
// rest with a line saying why; another process, `avenor control list`,
// still gets in and is answered.
func TestControlReserveForOtherProcesses(t *testing.T) {
	w := newWorld(t)
	s := w.startStable("reserve", nil)
	var flood []net.Conn
	defer func() {
		for _, c := range flood {
			c.Close()
		}
	}()
	for i := 0; i < control.MaxConnections+8; i++ {
		c, err := net.DialTimeout("unix", s.sock, time.Second)
		if err != nil {
			t.Fatalf("flood connection %d: %v", i+1, err)
		}
		flood = append(flood, c)
	}
	// The accept loop takes connections in order: one more is answered
	// once all of the flood's are counted.
	c, err := net.DialTimeout("unix", s.sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"code":-32000`) ||
		!strings.Contains(line, "too many control connections from one process") ||
		!strings.Contains(line, "control.MaxConnectionsPerProcess") {
		t.Fatalf("a connection over the process's share: %q %v", line, err)
	}

	res := w.run("control", "--socket", s.sock, "list")
	var entries []map[string]any
	if res.code != 0 || json.Unmarshal([]byte(res.stdout), &entries) != nil {
		t.Fatalf("`avenor control list` beside a process holding its whole share: %v", res)
	}
}
