package stable

import (
	"context"
	"errors"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/avenor-go/avenor/host/control/httpdebug"
	hostrun "github.com/avenor-go/avenor/host/run"
)

func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		gomemlimit  string
		maxRuntimes int
		want        int64
		wantOK      bool
	}{
		{"default runtimes", "", 0, SoftMemoryBaseBytes + DefaultMaxRuntimes*SoftMemoryBytesPerRuntime, true},
		{"negative is the default", "", -3, SoftMemoryBaseBytes + DefaultMaxRuntimes*SoftMemoryBytesPerRuntime, true},
		{"one runtime", "", 1, 48<<20 + 208<<10, true},
		{"200 runtimes: 88.6 MiB", "", 200, 48<<20 + 200*208<<10, true},
		{"the user's limit stands", "1GiB", 200, 0, false},
		{"the user's off stands", "off", 200, 0, false},
	} {
		got, ok := SoftMemoryLimit(tc.gomemlimit, tc.maxRuntimes)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: SoftMemoryLimit(%q, %d) = %d, %v; want %d, %v", tc.name, tc.gomemlimit, tc.maxRuntimes, got, ok, tc.want, tc.wantOK)
		}
	}
}

// TestServeSetsTheSoftMemoryLimitWhileItServes: a supervisor collects
// against its soft memory limit while it serves, and the process's limit
// is what it was once Serve returns; a GOMEMLIMIT in the environment is
// left alone.
func TestServeSetsTheSoftMemoryLimitWhileItServes(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	errStop := errors.New("stop here")
	for _, tc := range []struct {
		gomemlimit string
		want       int64
	}{
		{"", SoftMemoryBaseBytes + 40*SoftMemoryBytesPerRuntime},
		{"1GiB", before},
	} {
		dir := t.TempDir()
		getenv := func(k string) string {
			switch k {
			case "HOME":
				return dir
			case "GOMEMLIMIT":
				return tc.gomemlimit
			}
			return ""
		}
		var during int64
		_, err := Serve(context.Background(), ServeConfig{
			Config: Config{SocketPath: filepath.Join(dir, "s.sock"), MaxRuntimes: 40, MaxTreeBudget: 40},
			Env:    hostrun.Env{Getenv: getenv},
			HTTPDebug: func(httpdebug.Config) (*httpdebug.Server, error) {
				during = debug.SetMemoryLimit(-1)
				return nil, errStop
			},
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("GOMEMLIMIT=%q: Serve = %v, want the test's stop", tc.gomemlimit, err)
		}
		if during != tc.want {
			t.Errorf("GOMEMLIMIT=%q: the limit while serving is %d, want %d", tc.gomemlimit, during, tc.want)
		}
		if after := debug.SetMemoryLimit(-1); after != before {
			t.Errorf("GOMEMLIMIT=%q: the limit after Serve is %d, want %d as before", tc.gomemlimit, after, before)
		}
	}
}
