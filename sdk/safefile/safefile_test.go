package safefile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// otherUID stands for another local user: nobody, which owns nothing here.
const otherUID = 65534

// needRoot skips tests that must make files of another user.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes files owned by another uid")
	}
}

func mkdir(t *testing.T, path string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask, and sticky
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckDir(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	me := os.Geteuid()
	cases := []struct {
		name string
		mode os.FileMode
		uid  int
		want error
	}{
		{"ours private", 0o700, me, nil},
		{"ours readable", 0o755, me, nil},
		{"ours world-writable", 0o777, me, ErrShared},
		{"ours world-writable sticky", 0o777 | os.ModeSticky, me, nil},
		{"ours group-writable by our group", 0o770, me, nil},
		{"another user's", 0o755, otherUID, ErrNotOwned},
		{"another user's private", 0o700, otherUID, ErrNotOwned},
		{"another user's sticky", 0o777 | os.ModeSticky, otherUID, ErrNotOwned},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := mkdir(t, filepath.Join(root, strconv.Itoa(i)), c.mode, c.uid)
			err := CheckDir(dir)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("CheckDir(%s mode %v uid %d) = %v, want %v", dir, c.mode, c.uid, err, c.want)
			}
			if err != nil && !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the directory", err)
			}
		})
	}
	t.Run("group-writable by another group", func(t *testing.T) {
		dir := mkdir(t, filepath.Join(root, "g"), 0o770, me)
		if err := os.Lchown(dir, me, otherUID); err != nil {
			t.Fatal(err)
		}
		if err := CheckDir(dir); !errors.Is(err, ErrShared) {
			t.Fatalf("CheckDir = %v, want ErrShared", err)
		}
	})
	t.Run("a file", func(t *testing.T) {
		p := filepath.Join(root, "f")
		os.WriteFile(p, nil, 0o600)
		if err := CheckDir(p); !errors.Is(err, ErrNotDir) {
			t.Fatalf("CheckDir(file) = %v, want ErrNotDir", err)
		}
	})
}

func TestPrivateDir(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	me := os.Geteuid()
	target := mkdir(t, filepath.Join(root, "target"), 0o700, me)
	cases := []struct {
		name  string
		setup func(path string)
		want  error
	}{
		{"missing is created 0700", func(string) {}, nil},
		{"ours 0755 is tightened", func(p string) { mkdir(t, p, 0o755, me) }, nil},
		{"pre-created by another user", func(p string) { mkdir(t, p, 0o777, otherUID) }, ErrNotOwned},
		{"pre-created by another user, private", func(p string) { mkdir(t, p, 0o700, otherUID) }, ErrNotOwned},
		{"a symlink to our own directory", func(p string) {
			os.Symlink(target, p)
			os.Lchown(p, otherUID, otherUID)
		}, ErrSymlink},
		{"a file", func(p string) { os.WriteFile(p, nil, 0o600) }, ErrNotDir},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(root, strconv.Itoa(i))
			c.setup(p)
			err := PrivateDir(p)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("PrivateDir = %v, want %v", err, c.want)
			}
			if err != nil {
				return
			}
			st, _ := os.Lstat(p)
			if !st.IsDir() || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want a 0700 directory", p, st.Mode())
			}
		})
	}
	t.Run("in a world-writable directory that is not sticky", func(t *testing.T) {
		shared := mkdir(t, filepath.Join(root, "shared"), 0o777, me)
		if err := PrivateDir(filepath.Join(shared, "mine")); !errors.Is(err, ErrShared) {
			t.Fatalf("PrivateDir = %v, want ErrShared", err)
		}
	})
	t.Run("missing ancestors are created 0700", func(t *testing.T) {
		p := filepath.Join(root, "a", "b", "c")
		if err := PrivateDir(p); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), p} {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v, want 0700", d, st.Mode(), err)
			}
		}
	})
}

// TestWriteFileSymlinkSwap: a symlink planted at the target (by another
// user, in a sticky shared directory) is replaced, never written through.
func TestWriteFileSymlinkSwap(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	shared := mkdir(t, filepath.Join(root, "shared"), 0o777|os.ModeSticky, os.Geteuid())
	path := filepath.Join(shared, "x.req")
	for _, name := range []string{path, path + ".tmp"} {
		if err := os.Symlink(victim, name); err != nil {
			t.Fatal(err)
		}
		os.Lchown(name, otherUID, otherUID)
	}
	if err := WriteFile(path, []byte("request\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want a regular 0600 file", path, st.Mode(), err)
	}
	if b, _ := os.ReadFile(path); string(b) != "request\n" {
		t.Errorf("%s = %q", path, b)
	}
	left, _ := filepath.Glob(path + ".tmp-*")
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteFileRefusesSharedDir(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	os.Mkdir(shared, 0o777)
	os.Chmod(shared, 0o777)
	err := WriteFile(filepath.Join(shared, "f"), nil, 0o600)
	if !errors.Is(err, ErrShared) || !strings.Contains(err.Error(), "chmod +t") {
		t.Fatalf("WriteFile = %v, want ErrShared naming the fix", err)
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	os.WriteFile(victim, []byte("x"), 0o600)
	link := filepath.Join(root, "link")
	os.Symlink(victim, link)
	for _, p := range []string{victim, link} {
		if f, err := Create(p, 0o600); err == nil {
			f.Close()
			t.Errorf("Create(%s) succeeded over an existing entry", p)
		}
	}
}

func TestOpenLock(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	mine := filepath.Join(root, "mine.lock")
	f, err := OpenLock(mine)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	theirs := filepath.Join(root, "theirs.lock")
	os.WriteFile(theirs, nil, 0o666)
	os.Lchown(theirs, otherUID, otherUID)
	if _, err := OpenLock(theirs); !errors.Is(err, ErrNotOwned) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("OpenLock(another user's) = %v, want ErrNotOwned naming uid 65534", err)
	}
	link := filepath.Join(root, "link.lock")
	os.Symlink(mine, link)
	if _, err := OpenLock(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("OpenLock(symlink) = %v, want ErrSymlink", err)
	}
}

// TestRemoveStale: only our own entries of dead pids go.
func TestRemoveStale(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	dead := deadPID(t)
	live := os.Getppid()
	const prefix = "avenor-x-"
	mk := func(name string, uid int, isDir bool) string {
		p := filepath.Join(dir, name)
		if isDir {
			os.Mkdir(p, 0o700)
			os.WriteFile(filepath.Join(p, "inner"), nil, 0o600)
		} else {
			os.WriteFile(p, nil, 0o600)
		}
		os.Lchown(p, uid, uid)
		return p
	}
	cases := []struct {
		name    string
		path    string
		removed bool
	}{
		{"ours, dead, dir", mk(StaleName(prefix, dead)+"a", os.Geteuid(), true), true},
		{"ours, dead, file", mk(StaleName(prefix, dead)+"b.tree-budget", os.Geteuid(), false), true},
		{"ours, live", mk(StaleName(prefix, live)+"c", os.Geteuid(), true), false},
		{"ours, this process", mk(StaleName(prefix, os.Getpid())+"d", os.Geteuid(), true), false},
		{"another user's, dead", mk(StaleName(prefix, dead)+"e", otherUID, true), false},
		{"other prefix", mk(StaleName("plugin-", dead)+"f", os.Geteuid(), true), false},
		{"no pid", mk(prefix+"abc-g", os.Geteuid(), true), false},
	}
	got := RemoveStale(dir, prefix)
	for _, c := range cases {
		_, err := os.Lstat(c.path)
		if gone := errors.Is(err, os.ErrNotExist); gone != c.removed {
			t.Errorf("%s: %s removed=%v, want %v", c.name, c.path, gone, c.removed)
		}
	}
	if len(got) != 2 {
		t.Errorf("RemoveStale reported %v, want the 2 removed", got)
	}
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Skipf("pid %d was reused at once", pid)
	}
	return pid
}

// TestOpenTrunc: in a sticky shared directory a planted symlink and another
// user's file are refused; in our own directory a symlink is followed and a
// file of ours is truncated.
func TestOpenTrunc(t *testing.T) {
	needRoot(t)
	root := t.TempDir()
	victim := filepath.Join(root, "victim")
	os.WriteFile(victim, []byte("root's\n"), 0o600)
	shared := mkdir(t, filepath.Join(root, "shared"), 0o777|os.ModeSticky, os.Geteuid())
	own := mkdir(t, filepath.Join(root, "own"), 0o700, os.Geteuid())
	link := func(dir string) string {
		p := filepath.Join(dir, "link")
		os.Symlink(victim, p)
		os.Lchown(p, otherUID, otherUID)
		return p
	}
	theirs := filepath.Join(shared, "theirs")
	os.WriteFile(theirs, []byte("theirs\n"), 0o666)
	os.Lchown(theirs, otherUID, otherUID)
	mine := filepath.Join(shared, "mine")
	os.WriteFile(mine, []byte("old\n"), 0o644)
	cases := []struct {
		name string
		path string
		want error
	}{
		{"symlink in a shared dir", link(shared), ErrSymlink},
		{"another user's file in a shared dir", theirs, ErrNotOwned},
		{"our file in a shared dir", mine, nil},
		{"new file in a shared dir", filepath.Join(shared, "new"), nil},
		{"device", "/dev/null", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenTrunc(c.path, 0o644)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("OpenTrunc(%s) = %v, want %v", c.path, err, c.want)
			}
			if f != nil {
				f.Close()
			}
		})
	}
	if b, _ := os.ReadFile(victim); string(b) != "root's\n" {
		t.Errorf("victim truncated: %q", b)
	}
	if b, _ := os.ReadFile(mine); len(b) != 0 {
		t.Errorf("our file not truncated: %q", b)
	}
	// In a directory only we write, a symlink is ours and followed.
	f, err := OpenTrunc(link(own), 0o644)
	if err != nil {
		t.Fatalf("OpenTrunc(symlink in our dir) = %v", err)
	}
	f.Close()
}
