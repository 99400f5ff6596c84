package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tourCmd returns cmd after checking README.md shows it verbatim, so the
// tour and this test cannot part ways.
func tourCmd(t *testing.T, cmd string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), cmd) {
		t.Fatalf("README.md's tour no longer shows:\n%s", cmd)
	}
	return cmd
}

// sh runs a shell script in dir with the built binaries first on PATH.
func sh(t *testing.T, bin, dir, script string) string {
	t.Helper()
	c := exec.Command("bash", "-c", script)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s\n%v\n%s", script, err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeTour runs each step of README.md's tour as written, with the
// echo backend.
func TestReadmeTour(t *testing.T) {
	bin, err := filepath.Abs(testBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "avenor-plugin-echo")); err != nil {
		t.Skip("the echo plugin is not built")
	}

	t.Run("prompt", func(t *testing.T) {
		dir := t.TempDir()
		sh(t, bin, dir, tourCmd(t, `avenor --backend echo --prompt "hello" --on-event events.ndjson --sentinel-file run.done`))
		if s := readFile(t, filepath.Join(dir, "run.done")); !strings.HasPrefix(s, "DONE\n") {
			t.Errorf("sentinel:\n%s", s)
		}
		if out := sh(t, bin, dir, tourCmd(t, "avenor watch events.ndjson")); !strings.Contains(out, "EVENT session.end") {
			t.Errorf("watch:\n%s", out)
		}
	})

	t.Run("permission", func(t *testing.T) {
		dir := t.TempDir()
		run := tourCmd(t, "avenor --backend echo --prompt \"ask permission to write\" \\\n  --on-event events.ndjson --sentinel-file run.done")
		answer := tourCmd(t, "avenor answer --option allow_once run.perm")
		deadline := time.Now().Add(30 * time.Second).Unix()
		sh(t, bin, dir, run+` &
pid=$!
until [ -s run.perm.req ]; do [ $(date +%s) -lt `+strconv.FormatInt(deadline, 10)+` ] || exit 9; sleep 0.1; done
`+answer+`
wait $pid`)
		if s := readFile(t, filepath.Join(dir, "run.done")); !strings.HasPrefix(s, "DONE\n") {
			t.Errorf("sentinel:\n%s", s)
		}
		if s := readFile(t, filepath.Join(dir, "events.ndjson")); !strings.Contains(s, `"event":"permission.response"`) {
			t.Errorf("no permission.response in the events")
		}
	})

	t.Run("loop", func(t *testing.T) {
		dir := t.TempDir()
		write := tourCmd(t, "cat > loop.json <<'JSON'\n{\"max_iterations\": 3,\n \"loop\": [{\"name\": \"work\", \"prompt\": \"iteration {{.Iteration}}\"}]}\nJSON")
		run := tourCmd(t, "avenor --backend echo --loop-file loop.json --on-event loop.ndjson --sentinel-file loop.done")
		sh(t, bin, dir, write+"\n"+run)
		if s := readFile(t, filepath.Join(dir, "loop.done")); !strings.HasPrefix(s, "DONE\n") {
			t.Errorf("sentinel:\n%s", s)
		}
		if s := readFile(t, filepath.Join(dir, "loop.ndjson")); !strings.Contains(s, `"exit_reason":"max_iterations"`) {
			t.Errorf("the loop did not end by max_iterations")
		}
	})

	t.Run("stable", func(t *testing.T) {
		dir, err := os.MkdirTemp("/tmp", "avenor-tour-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "s.sock")
		steps := []string{
			tourCmd(t, "avenor stable --control-socket /tmp/avenor-stable.sock &"),
			"until [ -S /tmp/avenor-stable.sock ]; do sleep 0.1; done",
			tourCmd(t, `avenor control --socket /tmp/avenor-stable.sock spawn --backend echo --prompt "first" --label one`),
			tourCmd(t, `avenor control --socket /tmp/avenor-stable.sock spawn --backend echo --prompt "second" --label two`),
			tourCmd(t, "avenor control --socket /tmp/avenor-stable.sock list"),
			tourCmd(t, "avenor control --socket /tmp/avenor-stable.sock shutdown graceful"),
			"wait",
		}
		// The README's socket path, moved into this test's directory.
		script := strings.ReplaceAll(strings.Join(steps, "\n"), "/tmp/avenor-stable.sock", sock)
		out := sh(t, bin, dir, script)
		for _, want := range []string{`"label": "one"`, `"label": "two"`, "rt_2"} {
			if !strings.Contains(out, want) {
				t.Errorf("stable output lacks %s:\n%s", want, out)
			}
		}
	})
}
