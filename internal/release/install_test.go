package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// member is one entry of a fixture archive.
type member struct {
	hdr  tar.Header
	body string
}

func file(name, body string) member {
	return member{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(body))}, body: body}
}

// fixture is a small archive shaped like a release (avenor and one plugin
// under one directory), plus extra members, written to dir/name with a
// SHA256SUMS beside it that lists it; it returns the archive's path.
func fixture(t *testing.T, dir, name string, extra ...member) string {
	t.Helper()
	top := strings.TrimSuffix(name, ".tar.gz") + "/"
	ms := append([]member{
		{hdr: tar.Header{Typeflag: tar.TypeDir, Name: top, Mode: 0o755}},
		file(top+"avenor", "#!/bin/sh\necho avenor\n"),
		file(top+"avenor-plugin-echo", "#!/bin/sh\necho echo\n"),
	}, extra...)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, tarGz(t, ms), 0o644); err != nil {
		t.Fatal(err)
	}
	writeSums(t, dir, "\n", path)
	return path
}

func tarGz(t *testing.T, ms []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		if err := tw.WriteHeader(&m.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeSums writes dir/SHA256SUMS listing each archive, lines ended by eol.
func writeSums(t *testing.T, dir, eol string, archives ...string) {
	t.Helper()
	var b strings.Builder
	for _, a := range archives {
		b.WriteString(sha256File(t, a) + "  " + filepath.Base(a) + eol)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInstallScriptArchiveMembers: install.sh installs only what a release
// archive holds, files under relative names. An archive whose sum matches
// but that holds a link, an absolute or .. name or a device is refused and
// nothing is installed; in particular a symbolic link to a private file
// never installs that file as an executable.
func TestInstallScriptArchiveMembers(t *testing.T) {
	t.Parallel()
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "secret")
	if err := os.WriteFile(secret, []byte("private key material\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const top = "avenor_9.9.9_testos_testarch/"
	outside := filepath.Join(t.TempDir(), "planted")
	for _, c := range []struct {
		name  string
		extra member
		want  string
	}{
		{"symlink to a private file", member{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: top + "avenor-plugin-x", Linkname: secret, Mode: 0o777}},
			"holds a link"},
		{"relative symlink", member{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: top + "avenor-plugin-x", Linkname: "avenor", Mode: 0o777}},
			"holds a link"},
		{"hard link", member{hdr: tar.Header{Typeflag: tar.TypeLink, Name: top + "avenor-plugin-x", Linkname: top + "avenor", Mode: 0o755}},
			"holds a link"},
		{"absolute name", file(outside, "#!/bin/sh\n"), "holds a member outside its directory (" + outside + ")"},
		{"dot-dot name", file(top+"../../planted", "#!/bin/sh\n"), "holds a member outside its directory (" + top + "../../planted)"},
		{"dot-dot first", file("../planted", "#!/bin/sh\n"), "holds a member outside its directory (../planted)"},
		{"fifo", member{hdr: tar.Header{Typeflag: tar.TypeFifo, Name: top + "avenor-plugin-x", Mode: 0o644}},
			"holds a member that is not a file or a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dist := t.TempDir()
			archive := fixture(t, dist, "avenor_9.9.9_testos_testarch.tar.gz", c.extra)
			prefix := filepath.Join(t.TempDir(), "prefix")
			out, errOut, code := installScript(t, nil, "--archive", archive, "--prefix", prefix)
			if code == 0 {
				t.Fatalf("install.sh installed an archive with a %s: stdout %q stderr %q; %s/bin holds %v",
					c.name, out, errOut, prefix, listDir(t, filepath.Join(prefix, "bin")))
			}
			if !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "nothing was installed") {
				t.Errorf("install.sh stderr = %q, want it to say %q and that nothing was installed", errOut, c.want)
			}
			if got := listDir(t, filepath.Join(prefix, "bin")); len(got) != 0 {
				t.Errorf("a refused archive installed %v", got)
			}
			if _, err := os.Lstat(outside); !os.IsNotExist(err) {
				t.Errorf("a member was written outside the extraction directory: %s (lstat: %v)", outside, err)
			}
		})
	}
	t.Run("files only", func(t *testing.T) {
		t.Parallel()
		dist := t.TempDir()
		archive := fixture(t, dist, "avenor_9.9.9_testos_testarch.tar.gz", file(top+"avenor-plugin-x", "#!/bin/sh\necho x\n"))
		prefix := t.TempDir()
		if out, errOut, code := installScript(t, nil, "--archive", archive, "--prefix", prefix); code != 0 {
			t.Fatalf("install.sh: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		if got, want := listDir(t, filepath.Join(prefix, "bin")), []string{"avenor", "avenor-plugin-echo", "avenor-plugin-x"}; !slices.Equal(got, want) {
			t.Fatalf("%s/bin holds %v, want %v", prefix, got, want)
		}
	})
}

// TestInstallScriptReadsArchiveOnce: the archive is read once. A sha256sum
// that, as it returns the archive's (good) sum, renames another archive over
// the --archive path plays a user who can write the archive's directory
// swapping it between the check and the extraction: what is installed is
// still what was checked.
func TestInstallScriptReadsArchiveOnce(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	const name = "avenor_9.9.9_testos_testarch.tar.gz"
	archive := fixture(t, dist, name)
	evil := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(evil, tarGz(t, []member{file("avenor", "#!/bin/sh\necho swapped\n")}), 0o644); err != nil {
		t.Fatal(err)
	}
	shims := t.TempDir()
	var real string
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(p, "sha256sum")); err == nil && !fi.IsDir() {
			real = filepath.Join(p, "sha256sum")
			break
		}
	}
	if real == "" {
		t.Fatal("no sha256sum on PATH")
	}
	shim := "#!/bin/sh\nsum=$(" + real + " \"$@\") || exit 1\nmv -f " + evil + " " + archive + "\nprintf '%s\\n' \"$sum\"\n"
	if err := os.WriteFile(filepath.Join(shims, "sha256sum"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+shims+string(filepath.ListSeparator)+os.Getenv("PATH"))
	prefix := t.TempDir()
	if out, errOut, code := installScript(t, env, "--archive", archive, "--prefix", prefix); code != 0 {
		t.Fatalf("install.sh: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, err := os.Stat(evil); !os.IsNotExist(err) {
		t.Fatalf("the shim did not swap the archive (stat %s: %v)", evil, err)
	}
	got, err := os.ReadFile(filepath.Join(prefix, "bin", "avenor"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "#!/bin/sh\necho avenor\n" {
		t.Errorf("installed avenor is %q: the archive swapped in after its sum was checked was installed", got)
	}
}

// TestInstallScriptCRLFSums: a SHA256SUMS with CRLF line ends (saved on
// Windows, or by a browser) is read as the same list; a wrong sum in it is
// still a mismatch.
func TestInstallScriptCRLFSums(t *testing.T) {
	t.Parallel()
	dist := t.TempDir()
	archive := fixture(t, dist, "avenor_9.9.9_testos_testarch.tar.gz")
	writeSums(t, dist, "\r\n", archive)
	prefix := t.TempDir()
	if out, errOut, code := installScript(t, nil, "--archive", archive, "--prefix", prefix); code != 0 {
		t.Fatalf("install.sh with a CRLF SHA256SUMS: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got, want := listDir(t, filepath.Join(prefix, "bin")), []string{"avenor", "avenor-plugin-echo"}; !slices.Equal(got, want) {
		t.Fatalf("%s/bin holds %v, want %v", prefix, got, want)
	}
	wrong := sha256.Sum256([]byte("another archive"))
	if err := os.WriteFile(filepath.Join(dist, "SHA256SUMS"), []byte(hex.EncodeToString(wrong[:])+"  "+filepath.Base(archive)+"\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix = t.TempDir()
	_, errOut, code := installScript(t, nil, "--archive", archive, "--prefix", prefix)
	if code == 0 || !strings.Contains(errOut, "checksum mismatch") {
		t.Errorf("a wrong sum in a CRLF SHA256SUMS: exit %d, stderr %q; want a checksum mismatch", code, errOut)
	}
}
