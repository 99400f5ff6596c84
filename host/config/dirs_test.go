package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultDirs(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Dirs
		wantErr error
	}{
		{
			name: "home fallbacks",
			env:  map[string]string{"HOME": "/home/u"},
			want: Dirs{Config: "/home/u/.config/avenor", Data: "/home/u/.local/share/avenor", State: "/home/u/.local/state/avenor"},
		},
		{
			name: "xdg variables",
			env:  map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/s"},
			want: Dirs{Config: "/c/avenor", Data: "/d/avenor", State: "/s/avenor"},
		},
		{
			name: "xdg without home",
			env:  map[string]string{"XDG_CONFIG_HOME": "/c", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/s"},
			want: Dirs{Config: "/c/avenor", Data: "/d/avenor", State: "/s/avenor"},
		},
		{
			name: "some xdg, relative xdg ignored",
			env:  map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "rel/state"},
			want: Dirs{Config: "/home/u/.config/avenor", Data: "/d/avenor", State: "/home/u/.local/state/avenor"},
		},
		{
			name:    "no home",
			env:     map[string]string{"XDG_CONFIG_HOME": "/c"},
			wantErr: ErrNoHome,
		},
		{
			name:    "relative home",
			env:     map[string]string{"HOME": "home"},
			wantErr: ErrNoHome,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DefaultDirs(func(k string) string { return tt.env[k] })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := DefaultDirs(nil); !errors.Is(err, ErrNoHome) {
		t.Errorf("DefaultDirs(nil) err = %v, want ErrNoHome", err)
	}
}

func TestDirsPaths(t *testing.T) {
	d := Dirs{Config: "/c/avenor", Data: "/d/avenor", State: "/s/avenor"}
	for got, want := range map[string]string{
		d.UserConfigFile():        "/c/avenor/config.toml",
		d.PluginDir():             "/d/avenor/plugins",
		d.PluginStateDir("codex"): "/s/avenor/plugins/codex",
		ProjectConfigFile("/p/q"): "/p/q/.avenor/config.toml",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestFindProject(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("outer/.avenor")
	mk("outer/inner/.avenor")
	mk("outer/inner/a/b")
	mk("outer/other/c")
	mk("fileproj/d")
	if err := os.WriteFile(filepath.Join(root, "fileproj", ProjectMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, start, want string
		ok                bool
	}{
		{"project dir itself", "outer/inner", "outer/inner", true},
		{"nearest wins", "outer/inner/a/b", "outer/inner", true},
		{"sibling finds outer", "outer/other/c", "outer", true},
		{"start need not exist", "outer/other/c/missing", "outer", true},
		{"a .avenor file does not count", "fileproj/d", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, ok := FindProject(filepath.Join(root, tt.start))
			want := ""
			if tt.want != "" {
				want = filepath.Join(root, tt.want)
			}
			if ok != tt.ok || dir != want {
				// Outside the temp root a real ~/.avenor or /.avenor could
				// exist; only fail when the answer lies inside root.
				if !tt.ok && ok && !isUnder(dir, root) {
					t.Skipf("found a project above the test root: %s", dir)
				}
				t.Errorf("FindProject = %q, %v; want %q, %v", dir, ok, want, tt.ok)
			}
		})
	}

	t.Run("relative start", func(t *testing.T) {
		t.Chdir(filepath.Join(root, "outer", "inner", "a"))
		dir, ok := FindProject(".")
		if !ok || dir != filepath.Join(root, "outer", "inner") {
			t.Errorf("FindProject(.) = %q, %v", dir, ok)
		}
	})
}

func isUnder(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}
