package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	hashA = "sha256:" + strings.Repeat("a", 64)
	hashB = "sha256:" + strings.Repeat("b", 64)
)

// TestLockFileGolden pins the exact bytes of a lock file: sorted by family,
// keys in a fixed order, the same bytes however the pins were set.
func TestLockFileGolden(t *testing.T) {
	project := t.TempDir()
	l := &Lock{Project: project}
	for _, p := range []Pin{
		{Family: "opencode", Version: "0.3.0-dev", Hash: hashB, Path: "bin/avenor-plugin-opencode"},
		{Family: "echo", Version: "1.0.0", Hash: hashA},
	} {
		if err := l.Set(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Write(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(project, ".avenor", "plugins.lock"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "plugins.lock.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("lock file:\n%s\nwant (%s):\n%s", got, golden, want)
	}

	back, err := ReadLock(project)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Pins) != 2 || back.Pins["opencode"] != l.Pins["opencode"] || back.Pins["echo"] != l.Pins["echo"] {
		t.Fatalf("read back %+v, want %+v", back.Pins, l.Pins)
	}
	if string(back.Marshal()) != string(want) {
		t.Fatal("a lock read back does not marshal to the same bytes")
	}

	if !back.Remove("echo") || back.Remove("echo") {
		t.Fatal("Remove should report whether the family was pinned")
	}
}

func TestReadLockWithoutAFileIsEmpty(t *testing.T) {
	l, err := ReadLock(t.TempDir())
	if err != nil || len(l.Pins) != 0 {
		t.Fatalf("ReadLock = %+v, %v", l, err)
	}
}

func TestMalformedLockSaysWhereAndHowToFix(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"not toml", "[plugins.echo\n", "line 1"},
		{"unknown key", "[plugins.echo]\nversion = \"1.0.0\"\nhash = \"" + hashA + "\"\nchecksum = \"x\"\n", "checksum"},
		{"bad hash", "[plugins.echo]\nversion = \"1.0.0\"\nhash = \"md5:abc\"\n", `hash "md5:abc" is not "sha256:"`},
		{"no version", "[plugins.echo]\nhash = \"" + hashA + "\"\n", `version "" is not an exact version`},
		{"version escapes", "[plugins.echo]\nversion = \"../../x\"\nhash = \"" + hashA + "\"\n", `version "../../x"`},
		{"bad family", "[plugins.\"../sh\"]\nversion = \"1.0.0\"\nhash = \"" + hashA + "\"\n", "is not a plugin family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project := t.TempDir()
			path := filepath.Join(project, ".avenor", "plugins.lock")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadLock(project)
			if err == nil {
				t.Fatal("a malformed lock file was accepted")
			}
			for _, want := range []string{path, tc.want, "avenor plugin use"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestLockRecordsDevBuildsRelativeToTheProject(t *testing.T) {
	project := t.TempDir()
	l := &Lock{Project: project}
	inside := filepath.Join(project, "bin", "avenor-plugin-echo")
	if got := l.RelPath(inside); got != "bin/avenor-plugin-echo" {
		t.Errorf("RelPath(inside) = %q", got)
	}
	if got := l.BinaryPath(Pin{Family: "echo", Path: "bin/avenor-plugin-echo"}, "/data"); got != inside {
		t.Errorf("BinaryPath = %q, want %q", got, inside)
	}
	outside := filepath.Join(filepath.Dir(project), "elsewhere", "avenor-plugin-echo")
	if got := l.RelPath(outside); got != outside {
		t.Errorf("RelPath(outside) = %q, want it absolute", got)
	}
	if got := l.BinaryPath(Pin{Family: "echo", Version: "1.0.0"}, "/data"); got != "/data/echo/1.0.0/avenor-plugin-echo" {
		t.Errorf("BinaryPath(installed) = %q", got)
	}
}

func TestTOMLStringQuotes(t *testing.T) {
	if got := tomlString("a \"b\" \\ c\n"); got != `"a \"b\" \\ c\u000A"` {
		t.Errorf("tomlString = %s", got)
	}
}
