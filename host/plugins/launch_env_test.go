package plugins

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/avenor-go/avenor/sdk/plugin"
)

// TestLaunchEnvReachesThePluginOnly: the environment a launch gives (avenor
// stable's linger window) is in the plugin process's environment, makes it
// lead its own process group (a lingering plugin survives a kill of its
// host's group), and never enters this process's environment. A launch
// without it neither lingers nor leaves the host's group.
func TestLaunchEnvReachesThePluginOnly(t *testing.T) {
	dir := t.TempDir()
	buildSDK(t, dir, "avenor-plugin-echo", "./examples/echo/cmd/avenor-plugin-echo")
	found, err := Finder{PluginPath: []string{dir}}.Find("echo")
	if err != nil {
		t.Fatal(err)
	}
	before, had := os.LookupEnv(plugin.LingerEnv)
	want := plugin.LingerEnv + "=7s"
	for _, tc := range []struct {
		name    string
		env     []string
		lingers bool
	}{
		{"stable's launch", []string{want}, true},
		{"run's launch", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := LaunchWith(context.Background(), found, "echo", LaunchOptions{Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Client.Kill()
			pid := l.Client.PID()
			environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
			if err != nil {
				t.Fatal(err)
			}
			has := bytes.Contains(append([]byte{0}, environ...), []byte("\x00"+want+"\x00"))
			if has != tc.lingers {
				t.Errorf("plugin environment carries %s: %v, want %v", want, has, tc.lingers)
			}
			pgid, err := syscall.Getpgid(pid)
			if err != nil {
				t.Fatal(err)
			}
			if own := pgid == pid; own != tc.lingers {
				t.Errorf("plugin leads its own process group: %v, want %v", own, tc.lingers)
			}
			if after, has := os.LookupEnv(plugin.LingerEnv); after != before || has != had {
				t.Errorf("this process's %s changed: %q (set %v), was %q (set %v)", plugin.LingerEnv, after, has, before, had)
			}
		})
	}
}
