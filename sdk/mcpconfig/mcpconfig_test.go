package mcpconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func write(t *testing.T, dir, content string) string {
	t.Helper()
	p := Path(dir)
	if content != "" {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func TestEdits(t *testing.T) {
	srv := Server{Command: "/bin/avenor", Args: []string{"claude-channel", "--run-id", "r"}}
	tests := []struct {
		name    string
		initial string // "" = no file
		edit    func(p string) (int, error)
		wantN   int
		want    string // "" = file absent afterwards
	}{
		{
			name:  "upsert creates the file",
			edit:  func(p string) (int, error) { return 1, Upsert(p, "avenor-channel-1", srv) },
			wantN: 1,
			want: `{
  "mcpServers": {
    "avenor-channel-1": {
      "command": "/bin/avenor",
      "args": [
        "claude-channel",
        "--run-id",
        "r"
      ]
    }
  }
}
`,
		},
		{
			name:    "upsert replaces and keeps other keys",
			initial: `{"other":{"b":1,"a":[1,2]},"mcpServers":{"x":{"command":"x","custom":true},"avenor-channel-1":{"command":"old"}}}`,
			edit:    func(p string) (int, error) { return 1, Upsert(p, "avenor-channel-1", Server{Command: "new"}) },
			wantN:   1,
			want: `{
  "mcpServers": {
    "avenor-channel-1": {
      "command": "new"
    },
    "x": {
      "command": "x",
      "custom": true
    }
  },
  "other": {
    "b": 1,
    "a": [
      1,
      2
    ]
  }
}
`,
		},
		{
			name:    "remove one of two",
			initial: `{"mcpServers":{"a":{"command":"a"},"b":{"command":"b"}}}`,
			edit:    func(p string) (int, error) { ok, err := Remove(p, "a"); return b2i(ok), err },
			wantN:   1,
			want:    "{\n  \"mcpServers\": {\n    \"b\": {\n      \"command\": \"b\"\n    }\n  }\n}\n",
		},
		{
			name:    "remove the last entry deletes the file",
			initial: `{"mcpServers":{"a":{"command":"a"}}}`,
			edit:    func(p string) (int, error) { ok, err := Remove(p, "a"); return b2i(ok), err },
			wantN:   1,
		},
		{
			name:    "remove the last entry keeps other keys",
			initial: `{"k":"v","mcpServers":{"a":{"command":"a"}}}`,
			edit:    func(p string) (int, error) { ok, err := Remove(p, "a"); return b2i(ok), err },
			wantN:   1,
			want:    "{\n  \"k\": \"v\"\n}\n",
		},
		{
			name:    "remove absent entry leaves the file alone",
			initial: `{"mcpServers":{"a":{"command":"a"}}}`,
			edit:    func(p string) (int, error) { ok, err := Remove(p, "zz"); return b2i(ok), err },
			want:    `{"mcpServers":{"a":{"command":"a"}}}`,
		},
		{
			name: "remove from a missing file",
			edit: func(p string) (int, error) { ok, err := Remove(p, "a"); return b2i(ok), err },
		},
		{
			name:    "remove prefix",
			initial: `{"mcpServers":{"avenor-channel-1":{},"avenor-channel-2":{},"avenor-channelx":{},"mine":{}}}`,
			edit:    func(p string) (int, error) { return RemovePrefix(p, "avenor-channel-") },
			wantN:   2,
			want:    "{\n  \"mcpServers\": {\n    \"avenor-channelx\": {},\n    \"mine\": {}\n  }\n}\n",
		},
		{
			name:    "remove prefix empties everything",
			initial: `{"mcpServers":{"avenor-channel-1":{}}}`,
			edit:    func(p string) (int, error) { return RemovePrefix(p, "avenor-channel-") },
			wantN:   1,
		},
		{
			name:    "remove prefix none matching",
			initial: `{"mcpServers":{}}`,
			edit:    func(p string) (int, error) { return RemovePrefix(p, "avenor-channel-") },
			want:    `{"mcpServers":{}}`,
		},
		{
			name:    "empty file is an empty object",
			initial: " \n",
			edit:    func(p string) (int, error) { return 1, Upsert(p, "a", Server{Command: "c"}) },
			wantN:   1,
			want:    "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"c\"\n    }\n  }\n}\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, tc.initial)
			n, err := tc.edit(p)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantN {
				t.Errorf("n = %d, want %d", n, tc.wantN)
			}
			got, err := os.ReadFile(p)
			switch {
			case tc.want == "" && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("file should be absent; has %q (err %v)", got, err)
			case tc.want != "" && string(got) != tc.want:
				t.Errorf("file =\n%s\nwant\n%s", got, tc.want)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
			if len(left) > 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestMalformedLeftUntouched(t *testing.T) {
	for _, content := range []string{`{"mcpServers":`, `[]`, `null`, `"s"`, `{"mcpServers":[]}`, `{"mcpServers":null}`, `{"a":1}{`} {
		t.Run(content, func(t *testing.T) {
			dir := t.TempDir()
			p := write(t, dir, content)
			errs := []error{Upsert(p, "a", Server{Command: "c"})}
			_, err := Remove(p, "a")
			errs = append(errs, err)
			_, err = RemovePrefix(p, "a")
			errs = append(errs, err)
			for _, err := range errs {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "fix or remove") {
					t.Errorf("err = %v, want ErrMalformed naming %s and the fix", err, p)
				}
			}
			if got, _ := os.ReadFile(p); string(got) != content {
				t.Errorf("file changed to %q", got)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	dir := t.TempDir()
	big := `{"k":"` + strings.Repeat("x", MaxFileBytes) + `"}`
	p := write(t, dir, big)
	if err := Upsert(p, "a", Server{Command: "c"}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestMode(t *testing.T) {
	dir := t.TempDir()
	p := Path(dir)
	if err := Upsert(p, "a", Server{Command: "c"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file mode = %v (%v), want 0600", fi.Mode(), err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Upsert(p, "b", Server{Command: "c"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode = %v (%v), want the file's 0644 kept", fi.Mode(), err)
	}
}

// Concurrent sessions in one project must not lose each other's entries.
func TestConcurrentUpserts(t *testing.T) {
	dir := t.TempDir()
	p := Path(dir)
	var wg sync.WaitGroup
	const n = 20
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Upsert(p, "s"+string(rune('a'+i)), Server{Command: "c"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := Servers(p)
	if err != nil || len(got) != n {
		t.Fatalf("servers = %d (%v), want %d", len(got), err, n)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"mcpServers":{"a":{"command":"x"}}}`, `{"mcpServers":[]}`, `null`, `{"a":`, "\xff", `{"mcpServers":{"a":1},"b":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, servers, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			// A malformed file is never rewritten.
			dir := t.TempDir()
			p := Path(dir)
			if werr := os.WriteFile(p, data, 0o600); werr != nil {
				t.Fatal(werr)
			}
			if _, rerr := RemovePrefix(p, ""); rerr == nil {
				t.Fatal("RemovePrefix accepted a malformed file")
			}
			if got, _ := os.ReadFile(p); !bytes.Equal(got, data) {
				t.Fatal("malformed file was changed")
			}
			return
		}
		out, err := Render(top, servers)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		if out == nil {
			if len(servers) != 0 || len(top) > 1 || (len(top) == 1 && top[serversKey] == nil) {
				t.Fatalf("non-empty config rendered as empty: %q", data)
			}
			return
		}
		// What was parsed round-trips.
		top2, servers2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if len(servers2) != len(servers) {
			t.Fatalf("servers %d → %d", len(servers), len(servers2))
		}
		for k := range top {
			if k == serversKey {
				continue
			}
			var a, b any
			_ = json.Unmarshal(top[k], &a)
			_ = json.Unmarshal(top2[k], &b)
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("key %q changed: %s → %s", k, top[k], top2[k])
			}
		}
	})
}
