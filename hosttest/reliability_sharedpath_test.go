//go:build reliability

package hosttest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// These tests play another local user (uid 65534) against an avenor run as
// root, on the paths avenor writes in shared directories.
// They need root to own files as another uid.

func needRootOther(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root: the test makes files owned by uid %d", otherUID)
	}
}

// shareTmp makes the world's TMPDIR a shared sticky directory like /tmp.
func shareTmp(t *testing.T, w *world) {
	t.Helper()
	if err := os.Chmod(w.tmp, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
}

// asOther makes path (not following a symlink) the other user's.
func asOther(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
}

// rootFile is a file of root's with known content and mode, that another
// user would like root to overwrite.
func rootFile(t *testing.T, w *world) string {
	t.Helper()
	p := w.path("root-owned")
	if err := os.WriteFile(p, []byte("root's own\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	return p
}

func checkRootFile(t *testing.T, p string) {
	t.Helper()
	st, err := os.Stat(p)
	b, _ := os.ReadFile(p)
	if err != nil || string(b) != "root's own\n" || st.Mode().Perm() != 0o640 {
		t.Errorf("root's %s was written through the planted link: mode %v, content %q (%v)", p, st.Mode(), b, err)
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestReliabilitySharedPathStableDir: another user made
// $TMPDIR/avenor-stable first — a directory of theirs, or a symlink to a
// directory of root's. A spawn that needs the default artifacts is refused
// with an error naming the directory and the other uid (avenor does not
// fall back to some other directory: the contract names this one); nothing
// is written into theirs or through the link; a spawn that names its own
// files still runs.
func TestReliabilitySharedPathStableDir(t *testing.T) {
	needRootOther(t)
	for _, how := range []string{"directory", "symlink"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			shareTmp(t, w)
			squat := filepath.Join(w.tmp, "avenor-stable")
			target := squat
			switch how {
			case "directory":
				if err := os.Mkdir(squat, 0o777); err != nil {
					t.Fatal(err)
				}
				os.Chmod(squat, 0o777)
			case "symlink":
				target = w.path("root-dir")
				if err := os.Mkdir(target, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, squat); err != nil {
					t.Fatal(err)
				}
			}
			asOther(t, squat)
			s := w.startStable("s", nil)
			c := s.client()
			_, err := c.Spawn(ctxT(t, 30*time.Second), client.SpawnParams{Backend: "scripted", Prompt: "say hi"})
			if err == nil || !strings.Contains(err.Error(), squat) || !strings.Contains(err.Error(), "65534") {
				t.Errorf("spawn with the default artifacts in the other user's %s: %v; want a refusal naming it and uid 65534", squat, err)
			}
			if got := entries(t, target); len(got) != 0 {
				t.Errorf("avenor wrote into %s: %v", target, got)
			}
			own := client.SpawnParams{Backend: "scripted", Prompt: "say hi", OnEvent: w.path("ev.ndjson"), SentinelFile: w.path("s.done")}
			sp := spawn(t, c, own)
			waitEnded(t, c, sp.RuntimeID, 20*time.Second)
			s.signal(syscall.SIGTERM)
			s.wait()
		})
	}
}

// TestReliabilitySharedPathPermissionReq: the permission directory is
// shared. (a) Sticky, and the other user planted <base>.req.tmp as a
// symlink to a file of root's: the request is written, the root file is
// untouched. (b) World-writable without sticky (so the other user could
// also write the answer): the request is refused before anything is
// written, with an error naming the directory, and the run fails.
func TestReliabilitySharedPathPermissionReq(t *testing.T) {
	needRootOther(t)
	t.Run("sticky with a planted link", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		victim := rootFile(t, w)
		dir := w.path("perm")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777|fs.ModeSticky)
		base := filepath.Join(dir, "p")
		if err := os.Symlink(victim, base+".req.tmp"); err != nil {
			t.Fatal(err)
		}
		asOther(t, base+".req.tmp")
		p := w.start(nil, "--backend", "scripted", "--prompt", "permission", "--permission-handler", "file:"+base,
			"--sentinel-file", w.path("s.done"))
		if !waitFor(15*time.Second, func() bool { _, err := os.Stat(base + ".req"); return err == nil }) {
			p.signal(syscall.SIGTERM)
			t.Fatalf("no %s.req: %v", base, p.wait())
		}
		checkRootFile(t, victim)
		if st, err := os.Lstat(base + ".req"); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			t.Errorf("%s.req: %v %v, want a regular 0600 file", base, st.Mode(), err)
		}
		p.signal(syscall.SIGTERM)
		p.wait()
	})
	t.Run("world-writable not sticky", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		dir := w.path("perm")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o777)
		base := filepath.Join(dir, "p")
		p := w.start(nil, "--backend", "scripted", "--prompt", "permission", "--permission-handler", "file:"+base,
			"--sentinel-file", w.path("s.done"))
		res := waitBounded(t, p, 15*time.Second, "the request was written where any user can answer it, and the run waits for an answer")
		if res.code != 1 || !strings.Contains(res.stderr, dir) || !strings.Contains(res.stderr, "writable by other users") {
			t.Errorf("a request in a world-writable directory: %v; want exit 1 naming %s as writable by other users", res, dir)
		}
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("files written in %s: %v", dir, got)
		}
		if s := readFile(t, w.path("s.done")); !strings.HasPrefix(s, "FAILED\n") {
			t.Errorf("sentinel %q, want FAILED", s)
		}
	})
}

// waitBounded waits up to d for p to end; past d it kills p and fails
// saying why.
func waitBounded(t *testing.T, p *proc, d time.Duration, why string) result {
	t.Helper()
	done := make(chan result, 1)
	go func() { done <- p.wait() }()
	select {
	case res := <-done:
		return res
	case <-time.After(d):
		p.signal(syscall.SIGKILL)
		<-done
		t.Fatalf("still running after %v: %s", d, why)
		return result{}
	}
}

// holdLock runs flock(1) holding path, as uid (65534 or our own); it is
// killed at the test's end.
func holdLock(t *testing.T, path string, uid int) {
	t.Helper()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("needs flock(1)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := exec.CommandContext(ctx, flock, "--exclusive", path, "sleep", "60")
	if uid != os.Geteuid() {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	if err := c.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); c.Wait() })
	if !waitFor(5*time.Second, func() bool {
		b, _ := os.ReadFile("/proc/locks")
		_, err := os.Stat(path)
		return err == nil && strings.Contains(string(b), "FLOCK")
	}) {
		t.Fatalf("flock did not take %s", path)
	}
	time.Sleep(200 * time.Millisecond) // the lock itself, after the create
}

// TestReliabilitySharedPathControlLock: <sock>.control.lock is held by
// someone else — another uid, in a shared sticky directory, or another
// process of ours. avenor run does not hang at start: it fails within
// control.LockWait (5 s) and a margin, says which lock and who holds it,
// writes the FAILED sentinel and exits 1.
func TestReliabilitySharedPathControlLock(t *testing.T) {
	needRootOther(t)
	for _, who := range []string{"another uid", "this uid"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			shareTmp(t, w)
			sock := filepath.Join(w.tmp, "c.sock")
			uid, want := otherUID, "uid 65534"
			if who == "this uid" {
				uid, want = os.Geteuid(), "still locked after 5s by pid"
			}
			holdLock(t, sock+".control.lock", uid)
			sentinel := w.path("s.done")
			p := w.start(nil, "--backend", "scripted", "--prompt", "say hi", "--control-socket", sock, "--sentinel-file", sentinel)
			res := waitBounded(t, p, 15*time.Second, "avenor run hung at start on "+sock+".control.lock held by "+who)
			if res.code != 1 || !strings.Contains(res.stderr, sock+".control.lock") || !strings.Contains(res.stderr, want) {
				t.Errorf("avenor run with the lock held by %s: %v; want exit 1 naming the lock and %q", who, res, want)
			}
			if s := readFile(t, sentinel); !strings.HasPrefix(s, "FAILED\n") {
				t.Errorf("sentinel %q, want FAILED", s)
			}
		})
	}
}

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	return c.Process.Pid
}

// pluginDirs lists the go-plugin socket directories (plugin-dir*) anywhere
// under root.
func pluginDirs(root string) []string {
	var found []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "plugin-dir") {
			found = append(found, p)
		}
		return nil
	})
	return found
}

// TestReliabilitySharedPathStaleLeftovers: a host killed with SIGKILL leaves
// its plugin's socket directory in $TMPDIR, a stable root its tree-budget
// file in ~/.avenor/sockets. The next avenor removes them — only this user's
// and only those whose pid is dead: a live process's and another user's
// stay.
func TestReliabilitySharedPathStaleLeftovers(t *testing.T) {
	needRootOther(t)
	t.Run("plugin socket dirs", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		p := w.start(nil, "--backend", "scripted", "--prompt", "sleep 30s", "--on-event", w.path("ev.ndjson"))
		var left []string
		if !waitFor(15*time.Second, func() bool { left = pluginDirs(w.tmp); return len(left) > 0 }) {
			t.Fatalf("no plugin-dir* under %s while a plugin runs", w.tmp)
		}
		p.signal(syscall.SIGKILL)
		p.wait()
		if !waitFor(5*time.Second, func() bool { return len(childrenOf(p.pid(), "")) == 0 }) {
			t.Log("the plugin outlived its host")
		}
		// Marked as the dead host's was, so only pid and owner tell them
		// apart; and one of another go-plugin program, with no mark.
		live := filepath.Join(w.tmp, "plugin-dir-live")
		theirs := filepath.Join(w.tmp, "plugin-dir-theirs")
		foreign := filepath.Join(w.tmp, "plugin-dir-foreign")
		marks := map[string]int{live: os.Getpid(), theirs: deadPid(t), foreign: 0}
		for d, pid := range marks {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			if pid != 0 {
				if err := os.WriteFile(filepath.Join(d, ".avenor-host-"+strconv.Itoa(pid)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
		asOther(t, theirs)
		if res := w.run("--backend", "echo", "--prompt", "hi"); res.code != 0 {
			t.Fatalf("next run: %v", res)
		}
		got := pluginDirs(w.tmp)
		keep := map[string]bool{live: true, theirs: true, foreign: true}
		for _, d := range got {
			if !keep[d] {
				t.Errorf("%s left behind by the killed host (before: %v)", d, left)
			}
		}
		for d := range keep {
			if _, err := os.Stat(d); err != nil {
				t.Errorf("%s (a live host's, another user's or another program's) was removed: %v", d, err)
			}
		}
	})
	t.Run("tree budget files", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		sockets := filepath.Join(w.home, ".avenor", "sockets")
		s := w.startStable("s1", nil)
		var left []string
		if !waitFor(5*time.Second, func() bool {
			left, _ = filepath.Glob(filepath.Join(sockets, "tree-budget-"+strconv.Itoa(s.pid())+"-*"))
			return len(left) == 1
		}) {
			t.Fatalf("no tree budget file of pid %d in %s", s.pid(), sockets)
		}
		s.signal(syscall.SIGKILL)
		s.wait()
		live := filepath.Join(sockets, "tree-budget-"+strconv.Itoa(os.Getpid())+"-live.tree-budget")
		theirs := filepath.Join(sockets, "tree-budget-"+strconv.Itoa(deadPid(t))+"-theirs.tree-budget")
		for _, f := range []string{live, theirs} {
			if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		asOther(t, theirs)
		s2 := w.startStable("s2", nil)
		if _, err := os.Stat(left[0]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the killed root's %s is still there after the next root started: %v", left[0], err)
		}
		for _, f := range []string{live, theirs} {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("%s (a live process's or another user's) was removed: %v", f, err)
			}
		}
		s2.signal(syscall.SIGTERM)
		s2.wait()
	})
}

// TestReliabilitySharedPathPermissionResponse: with the sentinel in a
// shared sticky directory, the permission base derived from it is there
// too, and another user can create <base>.req.response first. avenor does
// not apply that answer: it warns naming the uid and keeps waiting; the
// run's own user's answer (avenor answer --force) is then taken and the
// run finishes.
func TestReliabilitySharedPathPermissionResponse(t *testing.T) {
	needRootOther(t)
	w := newWorld(t)
	shareTmp(t, w)
	sentinel := filepath.Join(w.tmp, "x.done")
	base := filepath.Join(w.tmp, "x.perm")
	evlog := w.path("ev.ndjson")
	p := w.start(nil, "--backend", "scripted", "--prompt", "permission\nsay after", "--sentinel-file", sentinel, "--on-event", evlog)
	if !waitFor(15*time.Second, func() bool { _, err := os.Stat(base + ".req"); return err == nil }) {
		p.signal(syscall.SIGTERM)
		t.Fatalf("no %s.req: %v", base, p.wait())
	}
	resp := base + ".req.response"
	if err := os.WriteFile(resp, []byte(`{"option_id":"allow"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	asOther(t, resp)
	if !waitFor(10*time.Second, func() bool {
		b, _ := os.ReadFile(evlog)
		return strings.Contains(string(b), "belongs to uid 65534")
	}) {
		p.signal(syscall.SIGTERM)
		t.Fatalf("no warning about uid 65534's response: %v", p.wait())
	}
	if b, _ := os.ReadFile(evlog); strings.Contains(string(b), `"permission.response"`) {
		t.Fatalf("uid 65534's answer was applied:\n%s", b)
	}
	if res := w.run("answer", "--option", "allow", "--force", base); res.code != 0 {
		t.Fatalf("avenor answer: %v", res)
	}
	res := waitBounded(t, p, 20*time.Second, "the run's own answer was not taken")
	if res.code != 0 || !strings.HasPrefix(readFile(t, sentinel), "DONE") {
		t.Errorf("after the run's own answer: %v, sentinel %q", res, readFile(t, sentinel))
	}
}
