//go:build reliability

package hosttest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestReliabilitySandboxNetworkEscape tries to reach a loopback server
// the allow-list leaves out (it answers "secret-reached"), from inside
// a bubblewrap sandbox with --sandbox-network allow=<another loopback
// server>: directly, through the proxy variables, through the proxy's
// socket by hand (absolute-form and CONNECT with a Host header naming
// the allowed one), at the host's own non-loopback address, over IPv6,
// and at the allowed port with the secret one's Host header. None may
// get an answer from it; the allowed server answers.
func TestReliabilitySandboxNetworkEscape(t *testing.T) {
	force := requireMechanism(t, "bubblewrap")
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secret-reached") }))
	defer secret.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "allowed-ok") }))
	defer allowed.Close()
	_, sp, _ := net.SplitHostPort(secret.Listener.Addr().String())
	_, ap, _ := net.SplitHostPort(allowed.Listener.Addr().String())
	hostIP := ""
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				hostIP = n.IP.String()
				break
			}
		}
	}
	c := "curl -s --max-time 10 "
	attempts := []string{
		c + "--noproxy '*' http://127.0.0.1:" + sp + "/",
		c + "http://127.0.0.1:" + sp + "/",
		c + "--proxytunnel -x \"$HTTPS_PROXY\" http://127.0.0.1:" + sp + "/",
		c + "--noproxy '*' 'http://[::1]:" + sp + "/'",
		c + "--noproxy '*' http://localhost:" + sp + "/",
		c + "--noproxy '*' -H 'Host: 127.0.0.1:" + sp + "' http://127.0.0.1:" + ap + "/",
		"for s in HOSTTMP/avenor-net-*/proxy.sock; do " + c + "--unix-socket $s --request-target http://127.0.0.1:" + sp + "/ http://x/; " +
			"printf 'CONNECT 127.0.0.1:" + sp + " HTTP/1.1\\r\\nHost: 127.0.0.1:" + ap + "\\r\\n\\r\\nGET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' | " +
			"timeout 10 python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); print(s.recv(65536).decode(errors=\"replace\"))' $s; done",
	}
	if hostIP != "" {
		attempts = append(attempts, c+"--noproxy '*' http://"+hostIP+":"+sp+"/", c+"http://"+hostIP+":"+sp+"/")
	}
	var script strings.Builder
	for i, a := range attempts {
		fmt.Fprintf(&script, "echo \"N%02d:$( { %s ; } 2>&1 | tr '\\n' ' ')\"\n", i, a)
	}
	fmt.Fprintf(&script, "echo \"OK:$(curl -s --max-time 10 --noproxy '*' http://127.0.0.1:%s/)\"\n", ap)
	w := newWorld(t)
	// The proxy's socket is bound into the sandbox where it lies on the
	// host: under avenor's TMPDIR.
	w.writeFile("work/net.sh", strings.ReplaceAll(script.String(), "HOSTTMP", w.tmp))
	evPath := w.path("events.ndjson")
	res := w.runEnv([]string{force}, "--backend", "scripted", "--dir", w.work, "--sandbox", "read-only",
		"--sandbox-network", "allow=127.0.0.1:"+ap, "--on-event", evPath, "--prompt", "lines sh "+filepath.Join(w.work, "net.sh")+"\n")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	said := saidText(readEvents(t, evPath))
	for _, line := range strings.Split(said, "\n") {
		var i int
		if _, err := fmt.Sscanf(line, "N%02d:", &i); err == nil && i < len(attempts) {
			t.Logf("%s\n    -> %s", attempts[i], strings.TrimSpace(line[4:]))
			if strings.Contains(line, "secret-reached") {
				t.Errorf("escaped: %s", attempts[i])
			}
		}
	}
	if !strings.Contains(said, "OK:allowed-ok") {
		t.Errorf("the allowed server did not answer inside the sandbox: %q", said)
	}
}
