package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// root is the repository root, two levels up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// shipped is what a user gets: avenor, the echo example and one plugin per
// plugin module. The scripted test plugin is not shipped.
func shipped(t *testing.T) []string {
	t.Helper()
	mods, err := filepath.Glob(filepath.Join(root(t), "plugins", "*", "go.mod"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("no plugin modules under plugins/ (%v)", err)
	}
	names := []string{"avenor", "avenor-plugin-echo"}
	for _, m := range mods {
		names = append(names, "avenor-plugin-"+filepath.Base(filepath.Dir(m)))
	}
	sort.Strings(names)
	return names
}

// run runs the command and returns its output and exit code.
func run(t *testing.T, env []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if env != nil {
		cmd.Env = env
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return o.String(), e.String(), code
}

// installScript runs install.sh from the repository with args.
func installScript(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, env, "sh", append([]string{filepath.Join(root(t), "install.sh")}, args...)...)
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// listDir returns the names in dir, sorted; none if it does not exist.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// flipByte writes a copy of src to dst with the byte in the middle inverted.
func flipByte(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeArchive writes a release-shaped tar.gz: files (name → path) under
// dir/ inside it, or at the top when dir is "".
func writeArchive(t *testing.T, path, dir string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	if dir != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := os.ReadFile(files[n])
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.Join(dir, n), Mode: 0o755, Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// testBinaries returns a directory holding avenor and avenor-plugin-echo:
// AVENOR_TEST_BIN's (make test), else freshly built ones.
func testBinaries(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("AVENOR_TEST_BIN"); dir != "" {
		return dir
	}
	dir := t.TempDir()
	for _, b := range []struct{ dir, pkg string }{
		{root(t), "./cmd/avenor"},
		{filepath.Join(root(t), "sdk"), "./examples/echo/cmd/avenor-plugin-echo"},
	} {
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), b.pkg)
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	return dir
}

// TestInstallScript drives install.sh on an archive laid out as a release's,
// built from the real binaries: it installs what a listed archive holds and
// nothing from one that is tampered with, unlisted or lacks its sums.
func TestInstallScript(t *testing.T) {
	bin := testBinaries(t)
	wantVersion, _, code := run(t, nil, filepath.Join(bin, "avenor"), "--version")
	if code != 0 || !strings.HasPrefix(wantVersion, "avenor v") {
		t.Fatalf("%s/avenor --version = %q, exit %d", bin, wantVersion, code)
	}
	files := map[string]string{
		"avenor":             filepath.Join(bin, "avenor"),
		"avenor-plugin-echo": filepath.Join(bin, "avenor-plugin-echo"),
	}
	const name = "avenor_9.9.9_testos_testarch"
	dist := t.TempDir()
	archive := filepath.Join(dist, name+".tar.gz")
	writeArchive(t, archive, name, files)
	flat := filepath.Join(dist, "avenor_9.9.9_flat.tar.gz")
	writeArchive(t, flat, "", files)
	tampered := filepath.Join(dist, "avenor_9.9.9_tampered.tar.gz")
	flipByte(t, archive, tampered)
	sums := filepath.Join(dist, "SHA256SUMS")
	// The tampered archive is listed under its name with the good archive's
	// sum, as if an attacker had replaced the file on the server.
	if err := os.WriteFile(sums, []byte(fmt.Sprintf("%s  %s\n%s  %s\n%s  %s\n",
		sha256File(t, archive), filepath.Base(archive),
		sha256File(t, flat), filepath.Base(flat),
		sha256File(t, archive), filepath.Base(tampered))), 0o644); err != nil {
		t.Fatal(err)
	}

	installed := func(t *testing.T, prefix string) {
		t.Helper()
		if got, want := listDir(t, filepath.Join(prefix, "bin")), []string{"avenor", "avenor-plugin-echo"}; !slices.Equal(got, want) {
			t.Fatalf("%s/bin holds %v, want %v", prefix, got, want)
		}
		if got, _, code := run(t, nil, filepath.Join(prefix, "bin", "avenor"), "--version"); code != 0 || got != wantVersion {
			t.Fatalf("installed avenor --version = %q (exit %d), want %q", got, code, wantVersion)
		}
	}
	refused := func(t *testing.T, prefix, stdout, stderr string, code int, want string) {
		t.Helper()
		if code == 0 {
			t.Fatalf("install.sh exited 0, want a refusal; stdout %q stderr %q", stdout, stderr)
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("install.sh stderr = %q, want it to say %q", stderr, want)
		}
		if got := listDir(t, filepath.Join(prefix, "bin")); len(got) != 0 {
			t.Errorf("a refused archive installed %v into %s/bin", got, prefix)
		}
	}

	t.Run("installs", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "prefix")
		out, errOut, code := installScript(t, nil, "--archive", archive, "--sums", sums, "--prefix", prefix)
		if code != 0 {
			t.Fatalf("install.sh: exit %d\nstdout %s\nstderr %s", code, out, errOut)
		}
		if !strings.Contains(out, "installed avenor and 1 plugins") {
			t.Errorf("install.sh stdout = %q, want it to say what it installed", out)
		}
		installed(t, prefix)
		// Again over the installed copy: an upgrade in place.
		if _, errOut, code := installScript(t, nil, "--archive="+archive, "--prefix="+prefix); code != 0 {
			t.Fatalf("install.sh over an installed copy (SHA256SUMS next to the archive): exit %d: %s", code, errOut)
		}
		installed(t, prefix)
	})
	t.Run("flat archive", func(t *testing.T) {
		prefix := t.TempDir()
		if _, errOut, code := installScript(t, nil, "--archive", flat, "--prefix", prefix); code != 0 {
			t.Fatalf("install.sh: exit %d: %s", code, errOut)
		}
		installed(t, prefix)
	})
	t.Run("shasum instead of sha256sum", func(t *testing.T) {
		// macOS has shasum, not sha256sum: a PATH with only the tools the
		// script needs and a shasum that is sha256sum underneath (perl's
		// shasum is not everywhere either).
		tools := t.TempDir()
		for _, tool := range []string{"sh", "awk", "cut", "sed", "gzip", "tar", "mktemp", "rm", "mkdir", "cp", "chmod", "mv", "basename", "dirname", "cat", "find"} {
			p, err := exec.LookPath(tool)
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			if err := os.Symlink(p, filepath.Join(tools, tool)); err != nil {
				t.Fatal(err)
			}
		}
		real, err := exec.LookPath("sha256sum")
		if err != nil {
			t.Fatal(err)
		}
		shim := "#!/bin/sh\n[ \"$1\" = -a ] && [ \"$2\" = 256 ] || { echo \"shasum: want -a 256, got $*\" >&2; exit 2; }\nshift 2\nexec " + real + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(tools, "shasum"), []byte(shim), 0o755); err != nil {
			t.Fatal(err)
		}
		env := []string{"PATH=" + tools, "HOME=" + t.TempDir()}
		prefix := t.TempDir()
		if _, errOut, code := installScript(t, env, "--archive", archive, "--prefix", prefix); code != 0 {
			t.Fatalf("install.sh with shasum only: exit %d: %s", code, errOut)
		}
		installed(t, prefix)
		// And the same PATH refuses the tampered archive.
		prefix = t.TempDir()
		out, errOut, code := installScript(t, env, "--archive", tampered, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "checksum mismatch")
	})
	t.Run("download", func(t *testing.T) {
		// --version fetches the archive for this machine and SHA256SUMS from
		// <base-url>/v<version>/; curl and wget read file:// URLs too.
		if _, err := exec.LookPath("curl"); err != nil {
			if _, err := exec.LookPath("wget"); err != nil {
				t.Skip("neither curl nor wget is installed")
			}
		}
		if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
			t.Skipf("install.sh has no archive name for %s", runtime.GOOS)
		}
		base := t.TempDir()
		rel := filepath.Join(base, "v9.9.9")
		if err := os.Mkdir(rel, 0o755); err != nil {
			t.Fatal(err)
		}
		name := archiveName("9.9.9", runtime.GOOS, runtime.GOARCH)
		writeArchive(t, filepath.Join(rel, name+".tar.gz"), name, files)
		good := sha256File(t, filepath.Join(rel, name+".tar.gz"))
		if err := os.WriteFile(filepath.Join(rel, "SHA256SUMS"), []byte(good+"  "+name+".tar.gz\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		prefix := t.TempDir()
		if _, errOut, code := installScript(t, nil, "--version", "v9.9.9", "--base-url", "file://"+base, "--prefix", prefix); code != 0 {
			t.Fatalf("install.sh --version 9.9.9: exit %d: %s", code, errOut)
		}
		installed(t, prefix)
		// The server's archive replaced, its SHA256SUMS not: refused.
		flipByte(t, filepath.Join(rel, name+".tar.gz"), filepath.Join(rel, name+".tar.gz"))
		prefix = t.TempDir()
		out, errOut, code := installScript(t, nil, "--version", "9.9.9", "--base-url", "file://"+base, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "checksum mismatch")
		// A version the server does not have.
		out, errOut, code = installScript(t, nil, "--version", "1.0.0", "--base-url", "file://"+base, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "downloading file://"+base+"/v1.0.0/")
	})
	t.Run("tampered", func(t *testing.T) {
		prefix := filepath.Join(t.TempDir(), "prefix")
		out, errOut, code := installScript(t, nil, "--archive", tampered, "--sums", sums, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "checksum mismatch for "+tampered)
		if !strings.Contains(errOut, "nothing was installed") {
			t.Errorf("install.sh stderr = %q, want it to say nothing was installed", errOut)
		}
	})
	t.Run("unlisted", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "avenor_1.0.0_linux_amd64.tar.gz")
		writeArchive(t, other, "", files)
		prefix := t.TempDir()
		out, errOut, code := installScript(t, nil, "--archive", other, "--sums", sums, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "lists no checksum for avenor_1.0.0_linux_amd64.tar.gz")
	})
	t.Run("no sums", func(t *testing.T) {
		dir := t.TempDir()
		lone := filepath.Join(dir, filepath.Base(archive))
		writeArchive(t, lone, name, files)
		prefix := t.TempDir()
		out, errOut, code := installScript(t, nil, "--archive", lone, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "no SHA256SUMS next to "+lone)
	})
	t.Run("no archive", func(t *testing.T) {
		prefix := t.TempDir()
		out, errOut, code := installScript(t, nil, "--prefix", prefix)
		refused(t, prefix, out, errOut, code, "give --archive FILE")
	})
}

// TestMakeInstallShipsOnly: make install puts the shipped binaries into
// PREFIX/bin and leaves the scripted test plugin out. It runs the real
// Makefile on a bin/ of stand-ins (make -o build: nothing is rebuilt).
func TestMakeInstallShipsOnly(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	bin := t.TempDir()
	for _, n := range append(shipped(t), "avenor-plugin-scripted") {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dest := t.TempDir()
	out, errOut, code := run(t, nil, "make", "-C", root(t), "-s", "-o", "build", "install", "BIN="+bin, "DESTDIR="+dest, "PREFIX=/usr")
	if code != 0 {
		t.Fatalf("make install: exit %d\n%s%s", code, out, errOut)
	}
	if got, want := listDir(t, filepath.Join(dest, "usr", "bin")), shipped(t); !slices.Equal(got, want) {
		t.Errorf("make install DESTDIR=%s PREFIX=/usr installed %v, want %v", dest, got, want)
	}
}

// dist is the directory `make release` wrote; the release tests skip without
// it (make release runs them).
func dist(t *testing.T) (dir, version string) {
	t.Helper()
	dir = os.Getenv("AVENOR_RELEASE_DIST")
	if dir == "" {
		t.Skip("AVENOR_RELEASE_DIST is not set; make release runs this test on the archives it built")
	}
	version = os.Getenv("AVENOR_RELEASE_VERSION")
	if version == "" {
		t.Fatal("AVENOR_RELEASE_DIST is set but AVENOR_RELEASE_VERSION is not; set it to the VERSION make release built")
	}
	return dir, version
}

var platforms = []struct{ os, arch string }{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

func archiveName(version, goos, arch string) string {
	return fmt.Sprintf("avenor_%s_%s_%s", version, goos, arch)
}

// readSums parses SHA256SUMS into file name → hex sum.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || len(fields[0]) != 64 {
			t.Fatalf("%s: malformed line %q", path, sc.Text())
		}
		sums[strings.TrimPrefix(fields[1], "*")] = fields[0]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestReleaseArchives checks what make release wrote: an archive per
// platform with exactly the shipped binaries, built for that platform and
// stripped, and SHA256SUMS matching every archive and install.sh.
func TestReleaseArchives(t *testing.T) {
	dir, version := dist(t)
	sums := readSums(t, filepath.Join(dir, "SHA256SUMS"))
	want := shipped(t)
	listed := []string{"install.sh"}
	var total int64
	for _, p := range platforms {
		name := archiveName(version, p.os, p.arch)
		file := name + ".tar.gz"
		listed = append(listed, file)
		path := filepath.Join(dir, file)
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("make release wrote no archive for %s/%s: %v", p.os, p.arch, err)
			continue
		}
		total += st.Size()
		t.Logf("%s: %.1f MB", file, float64(st.Size())/1e6)
		if got := sha256File(t, path); sums[file] != got {
			t.Errorf("SHA256SUMS lists %q for %s, the file is %s", sums[file], file, got)
		}
		checkArchive(t, path, name, p.os, p.arch, want)
	}
	t.Logf("all archives: %.1f MB", float64(total)/1e6)
	if got := sha256File(t, filepath.Join(dir, "install.sh")); sums["install.sh"] != got {
		t.Errorf("SHA256SUMS lists %q for install.sh, dist/install.sh is %s", sums["install.sh"], got)
	}
	if got, want := sha256File(t, filepath.Join(dir, "install.sh")), sha256File(t, filepath.Join(root(t), "install.sh")); got != want {
		t.Errorf("dist/install.sh is not the repository's install.sh")
	}
	var names []string
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	sort.Strings(listed)
	if !slices.Equal(names, listed) {
		t.Errorf("SHA256SUMS lists %v, want %v", names, listed)
	}
}

// checkArchive: path holds name/README.md and name/<each of want>, each an
// executable for goos/arch without symbols or DWARF.
func checkArchive(t *testing.T, path, name, goos, arch string, want []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	var bins []string
	var size int64
	readme := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		dir, base := filepath.Split(h.Name)
		if filepath.Clean(dir) != name {
			t.Errorf("%s: %s is not under %s/", path, h.Name, name)
		}
		if base == "README.md" {
			readme = true
			continue
		}
		if h.Mode&0o111 == 0 {
			t.Errorf("%s: %s is not executable (mode %o)", path, h.Name, h.Mode)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		size += int64(len(b))
		bins = append(bins, base)
		if err := checkBinary(b, goos, arch); err != nil {
			t.Errorf("%s: %s: %v", path, h.Name, err)
		}
	}
	sort.Strings(bins)
	if !slices.Equal(bins, want) {
		t.Errorf("%s holds %v, want %v (the shipped binaries; not the scripted test plugin)", path, bins, want)
	}
	if !readme {
		t.Errorf("%s holds no README.md", path)
	}
	t.Logf("%s/%s binaries: %.1f MB", goos, arch, float64(size)/1e6)
}

// checkBinary: b is an executable for goos/arch, stripped of its symbol
// table and DWARF (-s -w).
func checkBinary(b []byte, goos, arch string) error {
	r := bytes.NewReader(b)
	switch goos {
	case "linux":
		f, err := elf.NewFile(r)
		if err != nil {
			return fmt.Errorf("not an ELF file: %v", err)
		}
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
		if f.Machine != machine {
			return fmt.Errorf("built for %v, want %v", f.Machine, machine)
		}
		for _, s := range f.Sections {
			if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
				return fmt.Errorf("not stripped: has section %s", s.Name)
			}
		}
		if _, err := f.DynamicSymbols(); err == nil {
			return fmt.Errorf("dynamically linked, want static (CGO_ENABLED=0)")
		}
	case "darwin":
		f, err := macho.NewFile(r)
		if err != nil {
			return fmt.Errorf("not a Mach-O file: %v", err)
		}
		cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[arch]
		if f.Cpu != cpu {
			return fmt.Errorf("built for %v, want %v", f.Cpu, cpu)
		}
		for _, s := range f.Sections {
			if strings.HasPrefix(s.Name, "__debug_") || strings.HasPrefix(s.Name, "__zdebug_") {
				return fmt.Errorf("not stripped: has section %s", s.Name)
			}
		}
		// -s leaves only the undefined symbols dyld binds (libSystem's);
		// an unstripped binary defines some 20000.
		if f.Symtab != nil {
			defined := 0
			for _, s := range f.Symtab.Syms {
				if s.Type&0x0e != 0 { // N_TYPE other than N_UNDF
					defined++
				}
			}
			if defined > 0 {
				return fmt.Errorf("not stripped: defines %d symbols", defined)
			}
		}
	default:
		return fmt.Errorf("no check for %s", goos)
	}
	return nil
}

// TestReleaseInstall: install.sh installs this machine's archive from dist/
// into a temporary prefix, where avenor runs, reports the release's version
// and finds its plugins next to itself; the same archive with one byte
// flipped is refused and installs nothing.
func TestReleaseInstall(t *testing.T) {
	dir, version := dist(t)
	if !slices.Contains([]string{"linux", "darwin"}, runtime.GOOS) || !slices.Contains([]string{"amd64", "arm64"}, runtime.GOARCH) {
		t.Skipf("no release archive for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	file := archiveName(version, runtime.GOOS, runtime.GOARCH) + ".tar.gz"
	archive := filepath.Join(dir, file)
	sums := filepath.Join(dir, "SHA256SUMS")

	prefix := filepath.Join(t.TempDir(), "prefix")
	out, errOut, code := run(t, nil, "sh", filepath.Join(dir, "install.sh"), "--archive", archive, "--sums", sums, "--prefix", prefix)
	if code != 0 {
		t.Fatalf("install.sh %s: exit %d\n%s%s", file, code, out, errOut)
	}
	bin := filepath.Join(prefix, "bin")
	if got, want := listDir(t, bin), shipped(t); !slices.Equal(got, want) {
		t.Fatalf("install.sh installed %v, want %v", got, want)
	}
	if got, _, code := run(t, nil, filepath.Join(bin, "avenor"), "--version"); code != 0 || got != "avenor v"+version+"\n" {
		t.Errorf("installed avenor --version = %q (exit %d), want %q", got, code, "avenor v"+version+"\n")
	}
	got, errOut, code := run(t, nil, filepath.Join(bin, "avenor"), "version", "--json")
	var v struct {
		Version, Commit string
		PluginProtocol  int `json:"plugin_protocol"`
	}
	if code != 0 || json.Unmarshal([]byte(got), &v) != nil || v.Version != version || len(v.Commit) != 40 || v.PluginProtocol < 1 {
		t.Errorf("installed avenor version --json = %q (exit %d, stderr %q), want version %s, a full commit and the plugin protocol", got, code, errOut, version)
	}

	// avenor finds the plugins installed beside it, with no other plugin
	// directory in reach.
	home := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
	got, errOut, code = run(t, env, filepath.Join(bin, "avenor"), "backends", "--json")
	if code != 0 {
		t.Fatalf("installed avenor backends --json: exit %d: %s", code, errOut)
	}
	var rows []struct {
		Backend    string `json:"backend"`
		PluginPath string `json:"plugin_path"`
		Error      string `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &rows); err != nil {
		t.Fatalf("avenor backends --json: %v\n%s", err, got)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if r.Error != "" {
			t.Errorf("backend %s: %s", r.Backend, r.Error)
		}
		if filepath.Dir(r.PluginPath) != bin {
			t.Errorf("backend %s came from %s, want the installed %s", r.Backend, r.PluginPath, bin)
		}
		seen[filepath.Base(r.PluginPath)] = true
	}
	for _, n := range shipped(t) {
		if n != "avenor" && !seen[n] {
			t.Errorf("avenor backends does not list a backend of the installed %s:\n%s", n, got)
		}
	}

	// One byte flipped: refused, nothing installed.
	tamperedDir := t.TempDir()
	tampered := filepath.Join(tamperedDir, file)
	flipByte(t, archive, tampered)
	b, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tamperedDir, "SHA256SUMS"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	prefix2 := filepath.Join(t.TempDir(), "prefix")
	out, errOut, code = run(t, nil, "sh", filepath.Join(dir, "install.sh"), "--archive", tampered, "--prefix", prefix2)
	if code == 0 || !strings.Contains(errOut, "checksum mismatch") {
		t.Errorf("install.sh on a tampered %s: exit %d, stderr %q; want a checksum mismatch", file, code, errOut)
	}
	if got := listDir(t, filepath.Join(prefix2, "bin")); len(got) != 0 {
		t.Errorf("the tampered archive installed %v", got)
	}
	_ = out
}

// TestCheckBinary: the platform and strip check passes a static binary
// built as the release builds (-s -w, no cgo) and fails the same program
// built as go build does by default.
func TestCheckBinary(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("no check for %s", runtime.GOOS)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(goos, goarch, name string, args ...string) []byte {
		cmd := exec.Command("go", append(append([]string{"build", "-o", name}, args...), ".")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOOS="+goos, "GOARCH="+goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s for %s/%s: %v\n%s", name, goos, goarch, err, out)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// This machine's platform, and darwin/arm64's Mach-O (already built by
	// make release, so cached).
	for _, p := range []struct{ os, arch string }{{runtime.GOOS, runtime.GOARCH}, {"darwin", "arm64"}} {
		stripped := build(p.os, p.arch, "stripped", "-trimpath", "-ldflags=-s -w")
		if err := checkBinary(stripped, p.os, p.arch); err != nil {
			t.Errorf("checkBinary(a release-style %s/%s build) = %v, want nil", p.os, p.arch, err)
		}
		if err := checkBinary(build(p.os, p.arch, "unstripped"), p.os, p.arch); err == nil || !strings.Contains(err.Error(), "not stripped") {
			t.Errorf("checkBinary(a default %s/%s build) = %v, want a not-stripped error", p.os, p.arch, err)
		}
		other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[p.arch]
		if err := checkBinary(stripped, p.os, other); err == nil || !strings.Contains(err.Error(), "built for") {
			t.Errorf("checkBinary(a %s/%s binary, as %s) = %v, want a wrong-platform error", p.os, p.arch, other, err)
		}
	}
}
