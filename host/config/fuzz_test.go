package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadFile loads any bytes as the user's config.toml. Beyond not
// panicking: a refusal is one or more *Error, each naming the file and
// wrapping one of the package's sentinels (malformed TOML, unknown key,
// invalid value), so the user learns what to fix and where; an accepted
// file yields settings within their documented ranges.
func FuzzLoadFile(f *testing.F) {
	for _, seed := range []string{
		"backend = \"pi\"\nmodel = \"m\"\ntimeout = \"30m\"\nmax_retries = 2\nauto_approve = true\n",
		"[backends.pi]\nenv = { PI_KEY = \"x\" }\noptions = { gate = true }\nplugin = \"/opt/p\"\n",
		"[backends.scripted\nenv = {", "nonsense = 1\n[backends.x]\nbogus = 2\n", "timeout = -5\nmax_retries = -1\n",
		"progress_timeout = 1e400\n", "timeout = \"soon\"\n", "\x00\xff", "backends = 3\n", "[backends]\npi = 1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "config.toml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, _, err := Load(Sources{Dirs: Dirs{Config: dir}})
		if err != nil {
			for _, e := range leaves(err) {
				var ce *Error
				if !errors.As(e, &ce) || ce.Path != path || !strings.Contains(e.Error(), path) {
					t.Fatalf("a refusal that does not name the file: %v", e)
				}
				if !errors.Is(e, ErrMalformedFile) && !errors.Is(e, ErrUnknownKey) && !errors.Is(e, ErrInvalidValue) {
					t.Fatalf("a refusal of no known kind: %v", e)
				}
			}
			return
		}
		if s.Timeout < 0 || s.ProgressTimeout < 0 || s.PermissionClaimTimeout < 0 || s.MaxRetries < 0 {
			t.Fatalf("accepted out-of-range settings: %+v", s)
		}
	})
}

// leaves unwraps errors.Join trees into their leaves.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}
