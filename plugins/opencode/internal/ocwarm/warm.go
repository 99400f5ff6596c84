package ocwarm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/hashicorp/go-hclog"
)

// Bounds of a warm-up.
const (
	// Timeout bounds the whole warm-up: finding the port and the request.
	Timeout = 10 * time.Second
	// findEvery is how often the agent's listening port is looked for
	// while it is not there yet.
	findEvery = 50 * time.Millisecond
	// maxProcs bounds the processes looked at for the port.
	maxProcs = 64
)

// Environment of `opencode acp` that protects its HTTP API (basic auth).
const (
	PasswordEnv = "OPENCODE_SERVER_PASSWORD"
	UsernameEnv = "OPENCODE_SERVER_USERNAME"
	defaultUser = "opencode"
)

// Start warms up the agent process pid (or a descendant of it that holds
// the listening socket) for directory dir, in the background; env is the
// agent's environment (for its server password). stop cancels the warm-up
// and returns once it has ended. Where the port cannot be found (no /proc,
// another OpenCode) nothing happens but a debug line.
func Start(pid int, dir string, env []string, log hclog.Logger) (stop func()) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		start := time.Now()
		if err := warm(ctx, pid, dir, env); err != nil {
			log.Debug("opencode warm-up skipped", "error", err)
			return
		}
		log.Debug("opencode warmed up", "dir", dir, "took", time.Since(start))
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

func warm(ctx context.Context, pid int, dir string, env []string) error {
	var port int
	for {
		if port = ListeningPort(pid); port > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no listening port of process %d found", pid)
		case <-time.After(findEvery):
		}
	}
	d := url.QueryEscape(dir)
	if _, err := get(ctx, port, "/file?path=.&directory="+d, env); err != nil {
		return err
	}
	// The tool registry: its tools are set up (the shell tool finds its
	// shell, each tool builds its description) for the model the first
	// prompt will use, the configured one; without one there is nothing to
	// ask for.
	b, err := get(ctx, port, "/config?directory="+d, env)
	if err != nil {
		return err
	}
	var cfg struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("GET /config: %w", err)
	}
	provider, model, ok := strings.Cut(cfg.Model, "/")
	if !ok || provider == "" || model == "" {
		return nil
	}
	_, err = get(ctx, port, "/experimental/tool?provider="+url.QueryEscape(provider)+"&model="+url.QueryEscape(model)+"&directory="+d, env)
	return err
}

// maxAnswer bounds what is read of one warm-up answer.
const maxAnswer = 1 << 20

// get asks the agent's API for path (with its query), with basic auth when
// env sets a server password, and returns the answer's body.
func get(ctx context.Context, port int, path string, env []string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return nil, err
	}
	if pw := agentproc.Lookup(env, PasswordEnv); pw != "" {
		user := agentproc.Lookup(env, UsernameEnv)
		if user == "" {
			user = defaultUser
		}
		req.SetBasicAuth(user, pw)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		name, _, _ := strings.Cut(path, "?")
		return nil, fmt.Errorf("GET %s answered %s", name, resp.Status)
	}
	return b, nil
}

// ListeningPort is the loopback TCP port process pid, or else one of its
// descendants, listens on (0: none found). It reads /proc: the sockets
// of the processes' descriptors, matched against the kernel's table of
// listening sockets.
func ListeningPort(pid int) int {
	// The agent's own socket first: a descendant (an MCP or LSP server it
	// started) may listen too, and is asked only when the agent does not.
	if port := listeningOf([]int{pid}); port > 0 {
		return port
	}
	return listeningOf(withDescendants(pid)[1:])
}

func listeningOf(pids []int) int {
	inodes := map[string]bool{}
	for _, p := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", p)
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(dir, fd.Name()))
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if port := listening(table, inodes); port > 0 {
			return port
		}
	}
	return 0
}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

func listening(table string, inodes map[string]bool) int {
	f, err := os.Open(table)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != tcpListen || !inodes[fs[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(hexPort, 16, 16); err == nil && n > 0 {
			return int(n)
		}
	}
	return 0
}

// withDescendants is pid and the processes below it (the npm wrapper of
// opencode may run the real binary as its child).
func withDescendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out) && len(out) < maxProcs; i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					out = append(out, n)
				}
			}
		}
	}
	return out
}
