package sandbox

import (
	"reflect"
	"testing"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestDenialsLandlock: under Landlock a refusal in /tmp (the host's, not
// writable) is the boundary's, and the launcher's own failure is a launch
// denial of "landlock"; under bubblewrap /tmp stays the sandbox's own.
func TestDenialsLandlock(t *testing.T) {
	ll := sdk.Sandbox{Profile: sdk.SandboxWorkspace, Mechanism: sdk.MechanismLandlock, Writable: []string{"/work"}, DenyRead: []string{"/h/.ssh"}}
	bw := ll
	bw.Mechanism = sdk.MechanismBubblewrap
	// The last two lines are opencode 1.18's write and read tools refused
	// by Landlock (EACCES, worded as Effect's system errors).
	text := "sh: 1: cannot create /tmp/x: Permission denied\ncat: /h/.ssh/id: Permission denied\n" +
		"PermissionDenied: FileSystem.writeFile (/var/tmp/out.txt)\nPermissionDenied: FileSystem.open (/h/.ssh/key)\n"
	want := []Denial{{Op: OpWrite, Path: "/tmp/x"}, {Op: OpRead, Path: "/h/.ssh/id"}, {Op: OpWrite, Path: "/var/tmp/out.txt"}, {Op: OpRead, Path: "/h/.ssh/key"}}
	if got := Denials(ll, text); !reflect.DeepEqual(got, want) {
		t.Errorf("landlock: got %+v, want %+v", got, want)
	}
	if got := Denials(bw, text); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("bubblewrap: got %+v, want %+v", got, want[1:])
	}
	launch := "plugin: open: runtime exited: agentproc: the Landlock launcher did not start the runtime: landlock_create_ruleset (ABI 7): operation not permitted"
	got := LaunchDenials(ll, launch)
	if len(got) != 1 || got[0].Op != OpLaunch || got[0].Path != "landlock" || got[0].Message[:41] != "agentproc: the Landlock launcher did not " {
		t.Errorf("launch: got %+v", got)
	}
}
