package ochttp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/plugins/opencode/internal/occonfig"
	"github.com/avenor-go/avenor/sdk/agentproc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of the server the plugin starts.
const (
	serverStartTimeout = 60 * time.Second
	serverStopGrace    = 2 * time.Second
)

// ownServer is an `opencode serve` the plugin started for one session
// (docs/backends.md#opencode-http-plugin-opencode), in its own process group, guarded by a random
// password.
type ownServer struct {
	proc   *agentproc.Process
	url    string
	user   string
	pass   string
	binary string
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts `opencode serve --port <free>` in dir and waits for its
// "listening on" line.
func startServer(ctx context.Context, req runtime.OpenRequest, dir string, log hclog.Logger) (*ownServer, error) {
	bin := agentproc.ResolveBinary("opencode", BinaryEnv, req.Options, req.Env)
	port, err := freePort()
	if err != nil {
		return nil, runtime.Errorf(runtime.FaultPlugin, "%s: no free port for `opencode serve`: %v", Name, err)
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	srv := &ownServer{user: "opencode", pass: hex.EncodeToString(b), binary: bin}
	env := agentproc.Environ(req.Env, nil)
	env = append(env, PasswordEnv+"="+srv.pass, UsernameEnv+"="+srv.user)
	if env, err = launchConfig(env, req); err != nil {
		return nil, err
	}
	// The process lives with the session, not with Open's ctx.
	proc, err := agentproc.Start(context.Background(), agentproc.Spec{
		Path:        bin,
		Args:        []string{"serve", "--pure", "--log-level", "WARN", "--hostname", "127.0.0.1", "--port", strconv.Itoa(port)},
		Dir:         dir,
		Env:         env,
		InstallHint: installHint,
		Logger:      log,
	})
	if err != nil {
		var nf *agentproc.NotFoundError
		if errors.As(err, &nf) {
			return nil, runtime.Errorf(runtime.FaultRuntime, "%s: %v", Name, err)
		}
		return nil, runtime.Errorf(runtime.FaultRuntime, "%s: starting `%s serve`: %v", Name, bin, err)
	}
	srv.proc = proc
	timer := time.NewTimer(serverStartTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-proc.Lines():
			if !ok {
				_ = proc.Stop(serverStopGrace)
				return nil, runtime.Errorf(runtime.FaultRuntime, "%s: `%s serve` exited before listening (%v): %s", Name, bin, proc.ExitErr(), strings.TrimSpace(proc.StderrTail()))
			}
			if l.Err != nil {
				continue
			}
			line := string(l.Data)
			if i := strings.Index(line, "listening on "); i >= 0 {
				srv.url = strings.TrimSpace(line[i+len("listening on "):])
				go drain(proc)
				return srv, nil
			}
		case <-timer.C:
			_ = proc.Stop(serverStopGrace)
			return nil, runtime.Errorf(runtime.FaultRuntime, "%s: `%s serve` did not say it was listening within %s: %s", Name, bin, serverStartTimeout, strings.TrimSpace(proc.StderrTail()))
		case <-ctx.Done():
			_ = proc.Stop(serverStopGrace)
			return nil, runtime.Errorf(runtime.FaultRuntime, "%s: starting `%s serve`: %v", Name, bin, ctx.Err())
		}
	}
}

// drain reads the server's stdout until it exits; Lines is closed then.
func drain(p *agentproc.Process) {
	for range p.Lines() {
	}
}

func (s *ownServer) info(version string) runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: s.proc.PID(), PGID: s.proc.PGID(), Binary: s.binary, Version: version}
}

func (s *ownServer) String() string { return fmt.Sprintf("opencode serve pid %d", s.proc.PID()) }

// launchConfig puts the session's permission mode (permission.edit and
// permission.bash, top level and on its agent) and MCP servers into the
// server's inline config, OPENCODE_CONFIG_CONTENT, which wins over every
// config file; env is returned unchanged when neither is asked for.
func launchConfig(env []string, req runtime.OpenRequest) ([]string, error) {
	if req.PermissionMode == "" && len(req.Launch.MCPServers) == 0 {
		return env, nil
	}
	const key = "OPENCODE_CONFIG_CONTENT"
	content := agentproc.Lookup(env, key)
	var err error
	if req.PermissionMode != "" {
		if content, err = occonfig.WithPermissionMode(content, req.PermissionMode, req.Agent); err != nil {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
		}
	}
	if len(req.Launch.MCPServers) > 0 {
		if content, err = occonfig.WithMCPServers(content, req.Launch.MCPServers); err != nil {
			return nil, runtime.Errorf(runtime.FaultUser, "%s: %v", Name, err)
		}
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+content), nil
}
