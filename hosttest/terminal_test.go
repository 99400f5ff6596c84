package hosttest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestHTTPDebugTokenOnTerminal: with --http-debug and stderr a terminal the
// token line of docs/control-protocol.md#http-debug is printed, above the live view, so a person
// can use the listener; the live view's writer in front of stderr must not
// hide that stderr is a terminal.
func TestHTTPDebugTokenOnTerminal(t *testing.T) {
	w := newWorld(t)
	r := w.startPTY([]string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", "say hi\nsleep 1s",
		"--http-debug", "127.0.0.1:0")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, r.text())
	}
	screen := r.text()
	if !regexp.MustCompile(`avenor: http debug token: [0-9a-f]{32}\r?\n`).MatchString(screen) {
		t.Errorf("no token line on the terminal:\n%s", screen)
	}
	if !regexp.MustCompile(`■ end_turn · exit 0`).MatchString(screen) {
		t.Errorf("no live view:\n%s", screen)
	}
}

// TestInlinePermissionAnswer: stdin and stderr a terminal and nothing else
// set up to answer — the live view asks the request inline, a line that
// names no option asks again, and the person's "o" answers it through the
// broker (permission.response source "tty").
func TestInlinePermissionAnswer(t *testing.T) {
	w := newWorld(t)
	log := w.path("ev.ndjson")
	script := "say \"Hello\\n\"\npermission tool=bash question=\"Run make?\"\nsay \"made it\\n\""
	r := w.startPTYWith(true, []string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", script, "--on-event", log)
	r.waitFor("Allow once / Reject [o/r] ", 20*time.Second)
	r.typeLine("maybe")
	r.waitFor("answer o, r (or an option id)", 10*time.Second)
	r.typeLine("o")
	if code := r.wait(); code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, r.text())
	}
	screen := r.text()
	t.Logf("terminal:\n%s", screen)
	for _, want := range []string{
		"? permission ",
		"Run make?",
		"options: allow: Allow once, deny: Reject",
		"✓ allowed: allow by tty",
		"made it",
		"■ end_turn · exit 0",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "nothing is set up to answer") {
		t.Errorf("the note for an unanswerable request was printed although the terminal answers:\n%s", screen)
	}
	resp := firstEvent(t, readEvents(t, log), "permission.response")
	if resp.str("source") != "tty" || resp.str("option_id") != "allow" {
		t.Errorf("permission.response = %v, want option allow from source tty", resp)
	}
}

// TestInlinePermissionOnlyWhenNothingElseAnswers: with anything else set up
// to answer (here --on-permission deny, and the file handler of
// --sentinel-file) the terminal does not ask, and no "tty" source appears.
func TestInlinePermissionOnlyWhenNothingElseAnswers(t *testing.T) {
	w := newWorld(t)
	script := "permission tool=bash question=\"Run make?\"\nsay done"
	log := w.path("deny.ndjson")
	r := w.startPTYWith(true, []string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", script, "--on-event", log, "--on-permission", "deny")
	if code := r.wait(); code != 0 {
		t.Fatalf("--on-permission deny: exit %d; terminal:\n%s", code, r.text())
	}
	if strings.Contains(r.text(), "[o/r]") {
		t.Errorf("--on-permission deny: the terminal asked:\n%s", r.text())
	}
	if resp := firstEvent(t, readEvents(t, log), "permission.response"); resp.str("source") != "avenor" {
		t.Errorf("--on-permission deny: permission.response = %v", resp)
	}

	log = w.path("file.ndjson")
	r = w.startPTYWith(true, []string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", script, "--on-event", log, "--sentinel-file", w.path("run.done"))
	r.waitFor("avenor answer --option allow", 20*time.Second)
	if strings.Contains(r.text(), "[o/r]") {
		t.Errorf("--sentinel-file: the terminal asked:\n%s", r.text())
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(w.path("run.perm.req")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if res := w.run("answer", "--option", "deny", w.path("run.perm")); res.code != 0 {
		t.Fatalf("avenor answer: %v", res)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("--sentinel-file: exit %d; terminal:\n%s", code, r.text())
	}
	if resp := firstEvent(t, readEvents(t, log), "permission.response"); resp.str("source") != "file" {
		t.Errorf("--sentinel-file: permission.response = %v", resp)
	}
}

// firstEvent is the first event named name; the test fails without one.
func firstEvent(t *testing.T, evs []event, name string) event {
	t.Helper()
	got := only(evs, name)
	if len(got) == 0 {
		t.Fatalf("no %s event in %v", name, names(evs))
	}
	return got[0]
}

// TestDidYouMean: a mistyped command, flag or backend is answered with the
// nearest one that exists; a lone word close to a command is a mistake, not
// a prompt, and a one-word prompt still works with --prompt.
func TestDidYouMean(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"backend"}, 2, []string{`unknown command "backend"; did you mean backends?`, `--prompt "backend"`}},
		{[]string{"contrl", "status"}, 2, []string{"did you mean control?"}},
		{[]string{"control", "--socket", "/nonexistent.sock", "statsu"}, 2, []string{`unknown command "statsu"; did you mean status?`}},
		{[]string{"--backend", "echo", "--promt", "hi"}, 2, []string{"unknown flag: --promt; did you mean --prompt?"}},
		{[]string{"watch", "--folow", "x"}, 2, []string{"did you mean --follow?"}},
		{[]string{"--backend", "ecoh", "--prompt", "hi"}, 1, []string{"avenor: unknown backend \"ecoh\"\ndid you mean echo? installed: ", "scripted", "looked in:"}},
		{[]string{"--backend", "zzzzzz", "--prompt", "hi"}, 1, []string{"avenor: unknown backend \"zzzzzz\"\ninstalled: "}},
	} {
		res := w.run(c.args...)
		if res.code != c.code {
			t.Errorf("%q: %v; want exit %d", c.args, res, c.code)
		}
		for _, want := range c.want {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, want, res.stderr)
			}
		}
	}
	if res := w.run("--backend", "zzzzzz", "--prompt", "hi"); strings.Contains(res.stderr, "did you mean") {
		t.Errorf("a name near nothing got a suggestion: %s", res.stderr)
	}
	if res := w.run("--backend", "echo", "--prompt", "backend"); res.code != 0 {
		t.Errorf("a one-word prompt with --prompt: %v", res)
	}
}

// onTerminalStdout runs avenor with stdout a pseudo-terminal and returns
// what the terminal showed, its "\r\n" turned back into "\n".
func (w *world) onTerminalStdout(args ...string) string {
	w.t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		w.t.Fatalf("opening a pty: %v", err)
	}
	defer ptmx.Close()
	cmd := exec.Command(bins.avenor, args...)
	cmd.Dir, cmd.Env, cmd.Stdout = w.work, w.env, tty
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	read := make(chan []byte)
	go func() {
		data, _ := io.ReadAll(ptmx) // ends with EIO once the child's side is closed
		read <- data
	}()
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("avenor %q: %v\n%s", args, err, stderr.String())
	}
	tty.Close()
	select {
	case data := <-read:
		return strings.ReplaceAll(string(data), "\r\n", "\n")
	case <-time.After(10 * time.Second):
		w.t.Fatal("the terminal was not read out")
	}
	return ""
}

// TestWatchTranscriptOnTerminal: on a terminal `avenor watch <log>` retells
// the run (--format transcript); off a terminal the default stays the
// contract's plain digest, byte for byte; a flag a script gives keeps the
// digest on a terminal too. Both outputs are pinned by host/watch's golden
// files of the same log.
func TestWatchTranscriptOnTerminal(t *testing.T) {
	w := newWorld(t)
	testdata := filepath.Join("..", "host", "watch", "testdata")
	log, err := filepath.Abs(filepath.Join(testdata, "session.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	golden := func(name string) string {
		data, err := os.ReadFile(filepath.Join(testdata, "session."+name+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if got := w.onTerminalStdout("watch", log); got != golden("transcript") {
		t.Errorf("on a terminal:\n%s\nwant the transcript:\n%s", got, golden("transcript"))
	}
	if got := w.onTerminalStdout("watch", "--format", "transcript", log); got != golden("transcript") {
		t.Errorf("--format transcript:\n%s", got)
	}
	res := w.run("watch", log)
	if res.stdout != golden("plain") {
		t.Errorf("off a terminal:\n%s\nwant the plain digest:\n%s", res.stdout, golden("plain"))
	}
	if got := w.onTerminalStdout("watch", "--classify", "--no-color", log); got != golden("plain_classify") {
		t.Errorf("--classify on a terminal:\n%s\nwant the classified digest", got)
	}
}

// TestBackendsFitsATerminal: the default `avenor backends` table fits 100
// columns, every column has a header, and a legend explains the cells;
// -o wide has a header over every column too.
func TestBackendsFitsATerminal(t *testing.T) {
	w := newWorld(t)
	res := w.run("backends")
	if res.code != 0 {
		t.Fatalf("%v", res)
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	for _, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	head := strings.Fields(lines[0])
	if len(head) != 7 || head[0] != "BACKEND" || head[len(head)-1] != "READY" {
		t.Errorf("header %q", lines[0])
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "scripted" || f[0] == "echo") && len(f) != len(head)+1 { // PLUGIN is "name version"
			t.Errorf("row %q has %d cells under %d headers", l, len(f), len(head))
		}
	}
	for _, want := range []string{"exp: experimental", "?: declared, unverified", "-o wide", "--json"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("the legend lacks %q:\n%s", want, res.stdout)
		}
	}

	wide := w.run("backends", "-o", "wide")
	wl := strings.Split(wide.stdout, "\n")
	wideHead := strings.Fields(wl[0])
	for _, l := range wl[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "scripted" && len(f) != len(wideHead)+1 {
			t.Errorf("-o wide: row %q has %d cells under %d headers %q", l, len(f), len(wideHead), wl[0])
		}
	}
	if res := w.run("backends", "-o", "yaml"); res.code != 2 {
		t.Errorf("-o yaml: %v", res)
	}
}

// TestPermissionOptionsShownOnce: on a terminal whose stdin is not one (the
// terminal cannot answer), the live view shows the request and its options
// once, in words, and the note under it says only how to answer.
func TestPermissionOptionsShownOnce(t *testing.T) {
	w := newWorld(t)
	r := w.startPTY([]string{"NO_COLOR=1"}, "--backend", "scripted", "--prompt", geminiLike, "--timeout", "2s")
	if code := r.wait(); code != 124 {
		t.Fatalf("exit %d, want 124 (the request waits until --timeout); terminal:\n%s", code, r.text())
	}
	screen := r.text()
	if n := strings.Count(screen, "proceed_once"); n != 1 {
		t.Errorf("the option proceed_once is shown %d times, want once:\n%s", n, screen)
	}
	for _, want := range []string{"options: proceed_always: Always allow, proceed_once: Allow once, cancel: Reject", "nothing is set up to answer it"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, screen)
		}
	}
}
