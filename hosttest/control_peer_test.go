package hosttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// otherUID is the peer's uid and gid: nobody, which owns nothing here.
const otherUID = 65534

// peerGuard bounds one client run as the other uid.
const peerGuard = 15 * time.Second

// TestControlPeerOtherUID: a process running as another uid cannot control
// an avenor run or stable (docs/control-protocol.md#transport-and-framing, host/control doc): (a) the
// socket's 0700 directory alone keeps it out (connect: permission denied);
// (b) with the directory and socket opened up by hand, the host's own
// SO_PEERCRED check refuses the connection and logs the peer's pid and uid,
// and a client of the same uid is still served afterwards. It needs root
// to run a child as another uid; an unprivileged user namespace cannot map
// a second uid, so without root it skips.
func TestControlPeerOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs an `avenor control` child as uid 65534 (an unprivileged user namespace maps only one uid)")
	}
	t.Parallel()
	peerBin := filepath.Join(otherUIDBinaries(t), "avenor")
	for _, cmd := range []string{"run", "stable"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			// The world's TMPDIR is 0700 too: open it (not the socket's own
			// directory, which avenor creates) so only avenor's modes stand
			// in the peer's way.
			if err := os.Chmod(w.tmp, 0o711); err != nil {
				t.Fatal(err)
			}
			sockDir := filepath.Join(w.tmp, "ctl")
			sock := filepath.Join(sockDir, "c.sock")
			args := []string{"stable", "--control-socket", sock}
			if cmd == "run" {
				args = []string{"--backend", "scripted", "--control-socket", sock, "--prompt", "sleep 30s"}
			}
			p := w.start(nil, args...)
			if !waitFor(10*time.Second, func() bool { return sameUIDStatus(w, sock) == nil }) {
				p.signal(syscall.SIGTERM)
				t.Fatalf("avenor %s did not serve %s: %v", cmd, sock, p.wait())
			}

			// (a) The 0700 directory refuses the peer before avenor sees it.
			code, stderr, _ := peerStatus(t, peerBin, sock)
			if code == 0 || !strings.Contains(stderr, "permission denied") {
				t.Errorf("peer through the 0700 directory: exit %d, stderr %q; want a failure saying permission denied", code, stderr)
			}

			// (b) Open the path: now only SO_PEERCRED stands in the way.
			if err := os.Chmod(sockDir, 0o711); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(sock, 0o666); err != nil {
				t.Fatal(err)
			}
			code, stderr, pid := peerStatus(t, peerBin, sock)
			if code == 0 || strings.Contains(stderr, "permission denied") || strings.Contains(stderr, `"run_id"`) {
				t.Errorf("peer with the path opened: exit %d, stderr %q; want the connection closed by avenor", code, stderr)
			}
			if err := sameUIDStatus(w, sock); err != nil {
				t.Errorf("a same-uid client after the refusal: %v", err)
			}

			p.signal(syscall.SIGTERM)
			res := p.wait()
			want := fmt.Sprintf("refused a control connection: reason=\"peer pid %d runs as uid %d, this avenor as uid 0; only the same user may control it\"", pid, otherUID)
			if n := strings.Count(res.stderr, "refused a control connection"); n != 1 || !strings.Contains(res.stderr, want) {
				t.Errorf("avenor logged %d refusals, want exactly one: %s\n%s", n, want, res.stderr)
			}
		})
	}
}

// peerStatus runs `avenor control status` as otherUID: its exit code,
// output and pid.
func peerStatus(t *testing.T, bin, sock string) (int, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerGuard)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "control", "--socket", sock, "status")
	// The peer trusts root's socket (client.EnvTrustRoot): what is tested
	// is avenor's own check of the peer, past the client's of the server.
	c.Env = []string{"PATH=" + basePATH, "HOME=/", client.EnvTrustRoot + "=1"}
	c.Dir = "/"
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: otherUID, Gid: otherUID}}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("the peer's avenor control hung for %v", peerGuard)
	}
	if err != nil && c.ProcessState == nil {
		t.Fatalf("starting avenor control as uid %d: %v", otherUID, err)
	}
	return c.ProcessState.ExitCode(), out.String() + errb.String(), c.ProcessState.Pid()
}

// sameUIDStatus is `avenor control status` as this test's own uid.
func sameUIDStatus(w *world, sock string) error {
	res := w.run("control", "--socket", sock, "status")
	if res.code != 0 {
		return fmt.Errorf("%v", res)
	}
	return nil
}

// untraversable is the first directory from dir up to / that others may
// not pass through, "" when there is none.
func untraversable(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}
