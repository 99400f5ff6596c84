package agentproc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestForwardEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name, network string
		model         []runtime.NetDest
		want          []string
	}{
		{"loopback and any-host ports", "allow=127.0.0.1:8080,:9090,localhost:7070,[::1]:6060", nil,
			[]string{"127.0.0.1:8080", "127.0.0.1:9090", "127.0.0.1:7070", "[::1]:6060"}},
		{"remote hosts and portless entries need the proxy port", "allow=api.example.com:443,127.0.0.1", nil, nil},
		{"duplicates once", "allow=:8080,127.0.0.1:8080", nil, []string{"127.0.0.1:8080"}},
		{"model endpoints", "model", []runtime.NetDest{{Host: "127.0.0.1", Port: 4000}, {Host: "api.openai.com", Port: 443}},
			[]string{"127.0.0.1:4000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := forwardEndpoints(runtime.Sandbox{Network: tc.network, ModelEndpoints: tc.model})
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("forwardEndpoints = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestBwrapArgsFilteredNetworkNeedsSocket(t *testing.T) {
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap, Network: "allow=:8080"}
	if _, err := BwrapArgs(sb, "", []string{"/bin/true"}, StatPath); err == nil || !strings.Contains(err.Error(), "proxy socket") {
		t.Fatalf("err = %v; want the proxy socket refused", err)
	}
	sb.ProxySocket = "/run/x/proxy.sock"
	sb.RuntimeFiles = []string{sb.ProxySocket}
	args, err := BwrapArgs(sb, "", []string{"/bin/true"}, StatPath)
	if err != nil || !strings.Contains(strings.Join(args, " "), "--unshare-net") || !strings.Contains(strings.Join(args, " "), "--ro-bind /run/x/proxy.sock /run/x/proxy.sock") {
		t.Fatalf("args %q, %v; want --unshare-net and the socket bound", args, err)
	}
}

// testProxy is a stand-in for the host's filtering proxy: CONNECT to an
// allowed host:port is tunnelled, anything else is answered 403.
type testProxy struct {
	ln      net.Listener
	allowed string
	wg      sync.WaitGroup
	mu      sync.Mutex
	denied  []string
}

func startTestProxy(t *testing.T, allowed string) *testProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentproc-net-")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	p := &testProxy{ln: ln, allowed: allowed}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait(); os.RemoveAll(dir) })
	return p
}

func (p *testProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	dest := req.Host
	if req.Method != http.MethodConnect {
		dest = req.URL.Host
	}
	if req.Method != http.MethodConnect || dest != p.allowed {
		p.mu.Lock()
		p.denied = append(p.denied, dest)
		p.mu.Unlock()
		fmt.Fprint(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", dest)
	if err != nil {
		return
	}
	defer up.Close()
	fmt.Fprint(c, "HTTP/1.1 200 OK\r\n\r\n")
	go func() { _, _ = io.Copy(up, br) }()
	_, _ = io.Copy(c, up)
}

// TestStartSandboxedNetworkAllow: under bubblewrap with an allow-list,
// the allowed loopback endpoint answers at its own URL through the
// forwarder and the proxy; another loopback port is refused by the proxy
// through HTTP_PROXY and unreachable directly; the runtime sees neither
// the forwarder's variable nor anything on stdout but its own.
func TestStartSandboxedNetworkAllow(t *testing.T) {
	requireBwrap(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		t.Skip("needs curl")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "model-ok") }))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other-reached") }))
	defer other.Close()
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	proxy := startTestProxy(t, addr)
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap,
		Network: "allow=127.0.0.1:" + port, ProxySocket: proxy.ln.Addr().String()}
	p := startSh(t, Spec{Sandbox: sb}, `
		curl -s --max-time 20 --noproxy '*' http://127.0.0.1:`+port+`/; echo
		curl -s --max-time 20 -o /dev/null -w '%{http_code}\n' http://127.0.0.1:`+otherPort+`/
		curl -s --max-time 20 --noproxy '*' http://127.0.0.1:`+otherPort+`/ || echo direct-refused
		env | grep -c `+NetForwardEnv+` || true
		case "$HTTPS_PROXY" in http://127.0.0.1:*) echo proxy-set;; esac`)
	got := lineTexts(t, p)
	want := []string{"model-ok", "403", "direct-refused", "0", "proxy-set"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("inside the sandbox: got %q, want %q (stderr %q)", got, want, p.StderrTail())
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if d := strings.Join(proxy.denied, " "); d != "127.0.0.1:"+otherPort {
		t.Fatalf("proxy refused %q; want 127.0.0.1:%s", d, otherPort)
	}
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
}

// TestStopSandboxedNetworkForwarder: stopping a runtime behind the
// forwarder leaves neither of them, and the runtime's exit status is the
// forwarder's.
func TestStopSandboxedNetworkForwarder(t *testing.T) {
	requireBwrap(t)
	proxy := startTestProxy(t, "")
	sb := runtime.Sandbox{Profile: runtime.SandboxReadOnly, Mechanism: runtime.MechanismBubblewrap,
		Network: "allow=:8080", ProxySocket: proxy.ln.Addr().String()}
	p := startSh(t, Spec{Sandbox: sb, Dir: t.TempDir()}, `echo $$; sleep 100`)
	l := nextLine(t, p)
	inner, err := strconv.Atoi(string(l.Data))
	if err != nil {
		t.Fatalf("runtime pid line %q: %v (stderr %q)", l.Data, err, p.StderrTail())
	}
	runtimePID := hostPID(t, p.PID(), inner)
	forwarder := parentOf(runtimePID)
	_ = p.Stop(200 * time.Millisecond)
	waitGone(t, runtimePID)
	waitGone(t, forwarder)

	q := startSh(t, Spec{Sandbox: sb, Dir: t.TempDir()}, `exit 7`)
	<-q.Done()
	if err := q.ExitErr(); err == nil || !strings.Contains(err.Error(), "7") {
		t.Fatalf("exit through the forwarder: %v; want status 7", err)
	}
}
