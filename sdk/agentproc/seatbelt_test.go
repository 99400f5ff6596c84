package agentproc

import (
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// TestSeatbeltProfile: the macOS profile writes only where the sandbox
// allows, denies the deny list after the writable paths (so it wins),
// takes the network away under none, and refuses paths it cannot quote.
func TestSeatbeltProfile(t *testing.T) {
	sb := runtime.Sandbox{Profile: runtime.SandboxWorkspace, Writable: []string{"/w", `/we"ird\path`},
		DenyRead: []string{"/h/.ssh"}, Network: runtime.SandboxNetworkNone}.WithRuntimeDirs("/h/.config/rt")
	got, err := SeatbeltProfile(sb, "/tmp/avenor-sandbox-1")
	if err != nil {
		t.Fatal(err)
	}
	want := `(version 1)
(allow default)
(deny file-write*)
(allow file-write*
  (subpath "/w")
  (subpath "/we\"ird\\path")
  (subpath "/h/.config/rt")
  (subpath "/tmp/avenor-sandbox-1")
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper") (regex #"^/dev/tty"))
(deny file-read* file-write*
  (subpath "/h/.ssh"))
(deny network*)
(allow network* (local ip "localhost:*") (remote ip "localhost:*") (remote unix-socket))
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	ro, err := SeatbeltProfile(runtime.Sandbox{Profile: runtime.SandboxReadOnly, Writable: []string{"/w"}}, "/t")
	if err != nil || strings.Contains(ro, `"/w"`) || strings.Contains(ro, "network") {
		t.Errorf("read-only: %v\n%s", err, ro)
	}
	for _, bad := range []runtime.Sandbox{
		{Profile: runtime.SandboxWorkspace, Writable: []string{"rel"}},
		{Profile: runtime.SandboxWorkspace, DenyRead: []string{"/a\n(allow default)"}},
		{Profile: runtime.SandboxWorkspace, Network: "lan"},
		{},
	} {
		if _, err := SeatbeltProfile(bad, "/t"); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	if args := SeatbeltArgs("P", []string{"/bin/sh", "-c", "x"}); strings.Join(args, " ") != "-p P /bin/sh -c x" {
		t.Errorf("args %q", args)
	}
}
