package agentproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// The network forwarder (docs/sandbox.md#network). Under bubblewrap with
// --sandbox-network model or allow=…, the runtime gets a network
// namespace of its own, whose only interface is its loopback. The
// runtime is started through this very binary run again inside the
// sandbox with NetForwardEnv set, like the Landlock launcher: the
// package's init sees it, listens on 127.0.0.1 (or [::1]) at each allowed
// loopback port — so the URL the runtime already uses keeps working —
// and on one proxy port that HTTP_PROXY and HTTPS_PROXY name, and starts
// the runtime as its child. Every connection it accepts is relayed over
// the host proxy's Unix socket, bound into the sandbox, to the filtering
// proxy outside, which judges it. The forwarder writes nothing on stdout
// (the runtime's), ends with the runtime and exits with its status; its
// own failure ends the runtime (Pdeathsig), and it dies with the sandbox.

// NetForwardEnv carries the forwarder's spec (JSON); set, this package's
// init runs the forwarder instead of the program. The runtime does not
// see it.
const NetForwardEnv = "AVENOR_AGENTPROC_NETFWD"

// NetForwardFailed starts the line the forwarder writes on stderr when it
// could not start the runtime; its reason follows.
const NetForwardFailed = "agentproc: the network forwarder did not start the runtime: "

// netForwardSpec is what the plugin hands the forwarder.
type netForwardSpec struct {
	// Socket is the host proxy's Unix socket, bound into the sandbox.
	Socket string `json:"socket"`
	// Listen are the loopback endpoints listened on, each relayed to the
	// same host:port through the proxy ("127.0.0.1:8080", "[::1]:443").
	Listen []string `json:"listen,omitempty"`
}

// forwardEndpoints are the loopback host:port the forwarder listens on
// for sb: each allowed destination (allow-list entries, or the model
// endpoints) that names a port and whose host is loopback or any —
// an any-host entry on 127.0.0.1. Entries of other hosts, or of no port,
// are reached through the proxy port only.
func forwardEndpoints(sb runtime.Sandbox) ([]string, error) {
	p, err := runtime.ParseNetProfile(sb.Network)
	if err != nil {
		return nil, err
	}
	dests := p.Allow
	if p.Kind == runtime.SandboxNetworkModel {
		dests = sb.ModelEndpoints
	}
	var out []string
	for _, d := range dests {
		if d.Port == 0 || d.Host != "" && !d.Loopback() {
			continue
		}
		host := d.Host
		if host == "" || host == "localhost" {
			host = "127.0.0.1"
		}
		ep := net.JoinHostPort(host, strconv.Itoa(d.Port))
		if !contains(out, ep) {
			out = append(out, ep)
		}
	}
	return out, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// netForwardLaunch wraps the bwrap launch of argv in the forwarder: the
// argv it runs instead (this binary, then argv) and its environment.
// The binary is bound read-only into the sandbox (files).
func netForwardLaunch(sb runtime.Sandbox, argv []string) (wrapped, env, files []string, err error) {
	if !filepath.IsAbs(sb.ProxySocket) {
		return nil, nil, nil, fmt.Errorf("agentproc: --sandbox-network %s needs the host's proxy socket, and the host gave none; update avenor", sb.Network)
	}
	listen, err := forwardEndpoints(sb)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("agentproc: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("agentproc: locating this plugin's binary to forward the sandbox's network: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	b, err := json.Marshal(netForwardSpec{Socket: sb.ProxySocket, Listen: listen})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("agentproc: %w", err)
	}
	return append([]string{self}, argv...), []string{NetForwardEnv + "=" + string(b)}, []string{self, sb.ProxySocket}, nil
}

// netForwardMain is the forwarder: it returns only on failure before the
// runtime started; after, it exits with the runtime's status.
func netForwardMain(v string) error {
	var spec netForwardSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil || spec.Socket == "" {
		return fmt.Errorf("%s is not a forwarder spec (%v); unset it", NetForwardEnv, err)
	}
	if len(os.Args) < 2 {
		return errors.New("no runtime to start")
	}
	for _, ep := range spec.Listen {
		ln, err := net.Listen("tcp", ep)
		if err != nil {
			return fmt.Errorf("listening on %s inside the sandbox: %w", ep, err)
		}
		go forwardAccept(ln, spec.Socket, ep)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening for the proxy port inside the sandbox: %w", err)
	}
	go forwardAccept(proxyLn, spec.Socket, "")
	proxyURL := "http://" + proxyLn.Addr().String()
	env := make([]string, 0, len(os.Environ())+4)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case NetForwardEnv, "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HTTP_PROXY="+proxyURL, "HTTPS_PROXY="+proxyURL, "http_proxy="+proxyURL, "https_proxy="+proxyURL)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Args[0] = os.Args[1]
	cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdin, os.Stdout, os.Stderr, env
	cmd.SysProcAttr = forwardChildAttr()
	// Pdeathsig follows the thread that started the child: keep it.
	goruntime.LockOSThread()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", os.Args[1], err)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if st.Signaled() {
		os.Exit(128 + int(st.Signal()))
	}
	os.Exit(cmd.ProcessState.ExitCode())
	return nil
}

// forwardAccept relays each connection ln accepts: to dest through the
// proxy at sock (a CONNECT), or ("" dest, the proxy port) as proxyPort
// does.
func forwardAccept(ln net.Listener, sock, dest string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			if dest == "" {
				proxyPort(c, sock)
				return
			}
			up, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer up.Close()
			br := bufio.NewReader(up)
			fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, dest)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				return
			}
			Splice(c, c, up, br)
		}()
	}
}

// forwardHeaderBytes bounds the request head the proxy port reads.
const forwardHeaderBytes = 64 << 10

// proxyPort serves one connection to the proxy port: one request, then
// the connection is closed (an absolute-form request is sent on with
// Connection: close, so that a client keeping its connection cannot send
// the next request, maybe to another destination, down this one). A
// request for a loopback destination that something inside the sandbox
// listens on — the runtime's own server (OpenCode talks to itself over
// HTTP), or one of the forwarder's endpoints — goes there: the sandbox's
// own loopback is the runtime's already. Everything else, a loopback port
// nothing listens on included, goes to the host's proxy, which judges it
// (and reports a refusal).
func proxyPort(c net.Conn, sock string) {
	lr := &io.LimitedReader{R: c, N: forwardHeaderBytes}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	lr.N = math.MaxInt64
	up := dialLocal(req)
	local := up != nil
	if !local {
		if up, err = net.Dial("unix", sock); err != nil {
			fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			return
		}
	}
	defer up.Close()
	if req.Method == http.MethodConnect {
		upBr := bufio.NewReader(up)
		if local {
			if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				return
			}
		} else if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", req.Host, req.Host); err != nil {
			return
		}
		rest, _ := br.Peek(br.Buffered())
		if _, err := up.Write(rest); err != nil {
			return
		}
		Splice(c, c, up, upBr)
		return
	}
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if local {
		err = req.Write(up)
	} else {
		err = req.WriteProxy(up)
	}
	if err != nil {
		return
	}
	oneResponse(c, up, req)
}

// oneResponse reads req's response from up and writes it to c
// (RelayResponse), or a 502 when up sent none.
func oneResponse(c net.Conn, up net.Conn, req *http.Request) {
	if RelayResponse(c, up, req) != nil {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}
}

// RelayResponse reads req's response from up and writes it to c marked
// Connection: close (a server may not have said so: the client must not
// send its next request, maybe to another destination, down this
// connection), its body streamed as it comes (an event stream
// included); the forwarder and the host's filtering proxy relay a
// proxied request's answer with it. An error is why up sent no response;
// nothing was written to c then.
func RelayResponse(c, up net.Conn, req *http.Request) error {
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	resp.Close = true
	resp.Header.Del("Connection")
	resp.Header.Del("Keep-Alive")
	_ = resp.Write(c)
	return nil
}

// dialLocal is a connection to req's destination inside the sandbox when
// it is a loopback one something listens on; nil otherwise.
func dialLocal(req *http.Request) net.Conn {
	hostport := req.Host
	if req.Method != http.MethodConnect {
		if req.URL.Scheme != "http" {
			return nil
		}
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil || !(runtime.NetDest{Host: strings.ToLower(strings.Trim(host, "[]"))}).Loopback() {
		return nil
	}
	local, err := net.DialTimeout("tcp", hostport, 5*time.Second)
	if err != nil {
		return nil
	}
	return local
}

// Splice copies a's input (aIn: a itself, or a reader buffering it) to
// b and b's input (bIn) to a, half-closing each side's writes when its
// source ends, until both directions have ended: the forwarder's relay
// and the host's filtering proxy (host/sandbox) move a connection's bytes
// with it.
func Splice(a net.Conn, aIn io.Reader, b net.Conn, bIn io.Reader) {
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, aIn); closeWriteConn(b); done <- struct{}{} }()
	go func() { _, _ = io.Copy(a, bIn); closeWriteConn(a); done <- struct{}{} }()
	<-done
	<-done
}

// closeWriteConn half-closes c where it can, so the other side sees EOF.
func closeWriteConn(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

func init() {
	if v, ok := os.LookupEnv(NetForwardEnv); ok {
		err := netForwardMain(v)
		fmt.Fprintf(os.Stderr, "%s%v\n", NetForwardFailed, err)
		os.Exit(LandlockLauncherExit)
	}
}
