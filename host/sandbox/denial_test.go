package sandbox

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

var denialBox = sdk.Sandbox{
	Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismBubblewrap,
	Writable:    []string{"/work/app", "/var/cache/extra"},
	RuntimeDirs: []string{"/home/u/.codex"},
	DenyRead:    []string{"/home/u/.ssh", "/home/u/.netrc"},
}

func TestDenials(t *testing.T) {
	readOnly := denialBox
	readOnly.Profile, readOnly.Writable, readOnly.RuntimeDirs = sdk.SandboxReadOnly, nil, nil
	w := func(p string) Denial { return Denial{Op: OpWrite, Path: p} }
	r := func(p string) Denial { return Denial{Op: OpRead, Path: p} }
	for _, tc := range []struct {
		name string
		sb   sdk.Sandbox
		text string
		want []Denial
	}{
		{name: "coreutils write beside the workspace", text: "touch: cannot touch '/var/tmp/out/x.txt': Read-only file system\n", want: []Denial{w("/var/tmp/out/x.txt")}},
		{name: "sh redirection", text: "sh: 1: cannot create /var/tmp/out.txt: Read-only file system", want: []Denial{w("/var/tmp/out.txt")}},
		{name: "the shell named by its path is not the path refused", text: "/bin/sh: 1: cannot create /var/tmp/out.txt: Read-only file system", want: []Denial{w("/var/tmp/out.txt")}},
		{name: "bash names its line", text: "/usr/bin/bash: line 1: /srv/out.txt: Read-only file system", want: []Denial{w("/srv/out.txt")}},
		{name: "a path alone before its error is the path refused", text: "/srv/out.txt: Read-only file system", want: []Denial{w("/srv/out.txt")}},
		{name: "node EROFS", text: "Error: EROFS: read-only file system, open '/srv/outside.txt'", want: []Denial{w("/srv/outside.txt")}},
		{name: "node EACCES", text: `{"error":"EACCES: permission denied, mkdir '/opt/x'"}`, want: []Denial{w("/opt/x")}},
		{name: "python errno", text: "OSError: [Errno 30] Read-only file system: '/etc/hosts'", want: []Denial{w("/etc/hosts")}},
		{name: "operation not permitted", text: "chmod: changing permissions of '/usr/bin/x': Operation not permitted", want: []Denial{w("/usr/bin/x")}},
		{name: "deny list read looks missing", text: "cat: /home/u/.ssh/id_test: No such file or directory", want: []Denial{r("/home/u/.ssh/id_test")}},
		{name: "deny list file read denied", text: "open /home/u/.netrc: permission denied", want: []Denial{r("/home/u/.netrc")}},
		{name: "write into the deny list is a write", text: "touch: cannot touch '/home/u/.ssh/k': Read-only file system", want: []Denial{w("/home/u/.ssh/k")}},
		{name: "opencode read tool: deny list hidden", text: "File not found: /home/u/.ssh/id_test", want: []Denial{r("/home/u/.ssh/id_test")}},
		{name: "effect NotFound on the deny list", text: "NotFound: FileSystem.open (/home/u/.ssh/id_test)", want: []Denial{r("/home/u/.ssh/id_test")}},
		{name: "effect PermissionDenied write", text: "PermissionDenied: FileSystem.writeFile (/var/tmp/out.txt)", want: []Denial{w("/var/tmp/out.txt")}},
		{name: "a file not found elsewhere is no denial", text: "File not found: /work/app/nope\nNotFound: FileSystem.open (/etc/nope)"},
		{name: "a missing file elsewhere is no denial", text: "cat: /work/app/nope: No such file or directory\ncat: /etc/nope: No such file or directory"},
		{name: "an error inside the workspace is the tool's own", text: "touch: cannot touch '/work/app/ro': Permission denied"},
		{name: "runtime dirs are writable", text: "open /home/u/.codex/x: permission denied"},
		{name: "the private tmp, dev and proc are the sandbox's own", text: "rm: cannot remove '/tmp/x': Operation not permitted\n/proc/sys/kernel/x: Read-only file system\n/dev/x: Permission denied"},
		{name: "read-only: the workspace itself is not writable", sb: readOnly, text: "touch: cannot touch '/work/app/a': Read-only file system", want: []Denial{w("/work/app/a")}},
		{name: "a relative path is not reported", text: "touch: cannot touch 'x.txt': Read-only file system"},
		{name: "no error, no denial", text: "wrote /var/tmp/x.txt\n"},
		{name: "each path once", text: "a '/srv/x': Read-only file system\nb '/srv/x': Read-only file system\n", want: []Denial{w("/srv/x")}},
		{name: "several paths on one line", text: "ln: failed to create symbolic link '/srv/l' -> '/work/app/t': Permission denied", want: []Denial{w("/srv/l")}},
		{name: "a path inside a word is not a path", text: "see http://example.com/a: Permission denied"},
		{name: "bwrap's own failure", text: "bwrap: Can't bind mount /oldroot/srv/gone on /newroot/srv/gone: No such file or directory",
			want: []Denial{{Op: OpLaunch, Path: "/srv/gone", Message: "bwrap: Can't bind mount /oldroot/srv/gone on /newroot/srv/gone: No such file or directory"}}},
		{name: "bwrap quoted in an error", text: `runtime exited (exit status 1): bwrap: No permissions to create new namespace`,
			want: []Denial{{Op: OpLaunch, Path: "bwrap", Message: "bwrap: No permissions to create new namespace"}}},
		{name: "no sandbox denies nothing", sb: sdk.Sandbox{}, text: "touch: cannot touch '/srv/x': Read-only file system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := tc.sb
			if sb.Profile == "" && tc.name != "no sandbox denies nothing" {
				sb = denialBox
			}
			if got := Denials(sb, tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Denials(%q)\n got  %+v\n want %+v", tc.text, got, tc.want)
			}
		})
	}
}

// TestDenialsBounded: a flood of denied paths reports MaxDenialsPerOutput;
// what lies past MaxDenialScanBytes is not read.
func TestDenialsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 100 {
		b.WriteString("touch: cannot touch '/srv/" + strings.Repeat("x", i+1) + "': Read-only file system\n")
	}
	if got := Denials(denialBox, b.String()); len(got) != MaxDenialsPerOutput {
		t.Errorf("%d denials, want %d", len(got), MaxDenialsPerOutput)
	}
	late := strings.Repeat("a", MaxDenialScanBytes) + "\ntouch: cannot touch '/srv/late': Read-only file system\n"
	if got := Denials(denialBox, late); len(got) != 0 {
		t.Errorf("a denial past the scan bound was read: %+v", got)
	}
}

func TestLaunchDenials(t *testing.T) {
	text := "plugin: open: runtime exited: bwrap: Can't find source path /srv/w: No such file or directory\ntouch: cannot touch '/srv/x': Read-only file system"
	got := LaunchDenials(denialBox, text)
	if len(got) != 1 || got[0].Op != OpLaunch || got[0].Path != "/srv/w" {
		t.Errorf("LaunchDenials = %+v", got)
	}
}

// FuzzDenials: any output is read without a panic, within the bounds, and
// every denial names an op and an absolute path (or bwrap).
func FuzzDenials(f *testing.F) {
	for _, s := range []string{
		"touch: cannot touch '/var/tmp/x': Read-only file system",
		"cat: /home/u/.ssh/id_test: No such file or directory",
		"bwrap: Can't bind mount /oldroot/a on /newroot/a: Permission denied",
		"EACCES: permission denied, open '/'", "/:/:/ eperm", "bwrap: /oldroot", "",
		"PermissionDenied: FileSystem.open (/home/u/.ssh/id_test)", "File not found: /home/u/.ssh/x",
		"/bin/sh: 1: cannot create /var/tmp/x: Read-only file system", "/a: /b: /c: eperm",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Denials(denialBox, text)
		if len(got) > MaxDenialsPerOutput {
			t.Fatalf("%d denials", len(got))
		}
		for _, d := range got {
			switch d.Op {
			case OpWrite, OpRead:
				if !strings.HasPrefix(d.Path, "/") || d.Message != "" {
					t.Fatalf("denial %+v", d)
				}
			case OpLaunch:
				if d.Path == "" || len(d.Message) > MaxDenialMessageBytes+len("…") || !utf8.ValidString(d.Message) && utf8.ValidString(text) {
					t.Fatalf("launch denial %+v", d)
				}
			default:
				t.Fatalf("op %q", d.Op)
			}
		}
	})
}

func TestFailedEditDenial(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/var/tmp/x/outside.txt", true},
		{"/home/u/.ssh/config", true},
		{"/work/app/in.txt", false},
		{"/tmp/scratch", false},
		{"rel.txt", false},
	} {
		d, ok := FailedEditDenial(denialBox, tc.path)
		if ok != tc.ok || ok && (d.Op != OpWrite || d.Path != tc.path) {
			t.Errorf("FailedEditDenial(%q) = %+v, %v; want ok %v", tc.path, d, ok, tc.ok)
		}
	}
	if _, ok := FailedEditDenial(sdk.Sandbox{}, "/srv/x"); ok {
		t.Error("no sandbox denied an edit")
	}
}
