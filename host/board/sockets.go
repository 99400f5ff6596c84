package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/suprecord"
)

// Socket types in /api/sockets.
const (
	TypeStable  = "stable"   // answers list: a supervisor of many runtimes
	TypeOneShot = "one-shot" // `avenor run --control-socket`: one runtime
)

// SocketEntry is one item of /api/sockets.
type SocketEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	PID  int    `json:"pid,omitempty"`
	// Status is the socket's status snapshot (docs/control-protocol.md#status; a stable
	// supervisor adds its summary).
	Status json.RawMessage `json:"status,omitempty"`
	// Runtimes counts a stable supervisor's runtimes.
	Runtimes int `json:"runtimes"`
}

// errUnknownSocket: a socket param the board does not watch. The board
// dials only sockets it would list itself, so the API cannot be used to
// reach any other Unix socket of the user.
var errUnknownSocket = errors.New("socket is not one this board watches")

// sockets finds the socket paths: --socket, or the *.sock files of the
// scan directories, Config.Sockets and the recorded supervisors' sockets,
// sorted; the second result counts those cut by MaxSockets.
func (s *Server) sockets() ([]string, int) {
	if s.cfg.Socket != "" {
		return []string{s.cfg.Socket}, 0
	}
	s.cleanLeftovers()
	out := s.named()
	for _, dir := range s.scan {
		found, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
		for _, p := range found {
			if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	out = slices.Compact(out)
	if len(out) > MaxSockets {
		return out[:MaxSockets], len(out) - MaxSockets
	}
	return out, 0
}

// named is the sockets shown by name rather than found by a scan:
// Config.Sockets and the sockets of the supervisors recorded in
// Config.StateDir (a record whose process died is dropped there), cleaned.
func (s *Server) named() []string {
	var out []string
	for _, p := range s.cfg.Sockets {
		if p != "" {
			out = append(out, filepath.Clean(p))
		}
	}
	for _, r := range suprecord.List(s.cfg.StateDir) {
		if fi, err := os.Stat(r.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
			out = append(out, filepath.Clean(r.Socket))
		}
	}
	return out
}

// checkSocket validates a socket param: empty names the only socket of
// --socket; anything else must be --socket, a *.sock directly in a scan
// directory, or one of named.
func (s *Server) checkSocket(p string) (string, error) {
	if p == "" {
		if s.cfg.Socket != "" {
			return s.cfg.Socket, nil
		}
		return "", errors.New("socket parameter is required: a path from /api/sockets")
	}
	clean := filepath.Clean(p)
	if s.cfg.Socket != "" {
		if clean == filepath.Clean(s.cfg.Socket) {
			return s.cfg.Socket, nil
		}
		return "", fmt.Errorf("%w: %q (the board was started with --socket %s)", errUnknownSocket, p, s.cfg.Socket)
	}
	if slices.Contains(s.named(), clean) {
		return clean, nil
	}
	if strings.HasSuffix(clean, ".sock") {
		for _, dir := range s.scan {
			if filepath.Dir(clean) == filepath.Clean(dir) {
				return clean, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %q is not a *.sock file in %s", errUnknownSocket, p, strings.Join(s.scan, ", "))
}

// probe describes one socket for /api/sockets; ok is false for a stale
// socket (nothing listens) or one that does not answer in time.
func (s *Server) probe(ctx context.Context, path string) (SocketEntry, bool) {
	c, release, err := s.conn(ctx, path)
	if err != nil {
		return SocketEntry{}, false
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	e := SocketEntry{Path: path, Type: TypeOneShot}
	list, err := c.List(ctx)
	var re *client.RPCError
	switch {
	case err == nil:
		e.Type, e.Runtimes = TypeStable, len(list)
	case errors.As(err, &re) && re.Code == client.CodeMethodNotFound:
		e.Runtimes = 1
	default:
		return SocketEntry{}, false
	}
	if st, err := c.Status(ctx); err == nil {
		e.Status, e.PID = st.Raw, st.PID
		var sup struct {
			PID int `json:"supervisor_pid"`
		}
		if json.Unmarshal(st.Raw, &sup) == nil && sup.PID != 0 {
			e.PID = sup.PID
		}
	}
	return e, true
}
