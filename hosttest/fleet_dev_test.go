package hosttest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/avenor-go/avenor/client"
)

// TestFleetDevAuthenticated: `avenor fleet dev` writes its generated keys
// 0600 under $XDG_STATE_HOME/avenor/fleet-dev/<port>, refuses a client
// without one, and a fleet built with them as it prints (a node with its
// pool's key, fleet serve with the fleet key) runs a spawn end to end. At
// exit the keys are removed.
func TestFleetDevAuthenticated(t *testing.T) {
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	dev := w.start(nil, "fleet", "dev", "--port", port)
	creds := filepath.Join(w.state, "avenor", "fleet-dev", port)
	fleetKey, nodeKey := filepath.Join(creds, "fleet.nk"), filepath.Join(creds, "node-default.nk")
	if !waitFor(10*time.Second, func() bool {
		_, e1 := os.Stat(fleetKey)
		_, e2 := os.Stat(nodeKey)
		return e1 == nil && e2 == nil
	}) {
		dev.signal(syscall.SIGTERM)
		t.Fatalf("fleet dev wrote no keys in %s: %v", creds, dev.wait())
	}
	for _, p := range []string{fleetKey, nodeKey} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", p, fi.Mode())
		}
	}
	url := "nats://127.0.0.1:" + port
	if nc, err := nats.Connect(url, nats.Timeout(2*time.Second)); err == nil {
		nc.Close()
		t.Error("a client without a key connected to fleet dev")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("a client without a key: %v, want an authorization violation", err)
	}

	w.startNode(url, "n1", "--fleet-nkey", nodeKey)
	_, sock := w.startFleetServe(url, "--fleet-nkey", fleetKey)
	c := fleetClient(t, sock, "n1")
	sp, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Prompt: "say through the keys"})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded(t, c, sp.RuntimeID, 60*time.Second)
	if rt := runtimeOf(t, c, sp.RuntimeID); rt.StopReason != "end_turn" {
		t.Errorf("the spawn through fleet dev's keys: %s", rt.Raw)
	}

	dev.signal(syscall.SIGTERM)
	res := dev.wait()
	if !strings.Contains(res.stdout, url+"\n") || !strings.Contains(res.stdout, "--fleet-nkey "+fleetKey) || !strings.Contains(res.stdout, "--fleet-nkey "+nodeKey) {
		t.Errorf("fleet dev's output does not say how to connect: %q", res.stdout)
	}
	if _, err := os.Stat(fleetKey); !os.IsNotExist(err) {
		t.Errorf("fleet dev left its key %s: %v", fleetKey, err)
	}
}
