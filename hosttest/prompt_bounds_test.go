package hosttest

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestPromptRefusedBeforeLaunch: a prompt that cannot reach a plugin — not
// UTF-8, or longer than sdk.MaxPromptBytes — and a --dir whose path is not
// UTF-8 are refused in validation (docs/run.md#validation: exit 1, a FAILED sentinel) with a
// message naming the input and the fix, before any plugin starts. They used
// to launch the plugin and fail 2 s later with a gRPC error blaming it.
func TestPromptRefusedBeforeLaunch(t *testing.T) {
	t.Parallel()
	const notUTF8 = " is not valid UTF-8 (byte 0xff at offset 6); prompts are sent as text: convert it to UTF-8 (e.g. iconv -t UTF-8)"
	tooLarge := func(n int) string {
		return fmt.Sprintf(" is %d bytes; a prompt is at most %d bytes (MaxPromptBytes): shorten it, or put the material in a file the agent reads", n, sdk.MaxPromptBytes)
	}
	cases := []struct {
		name string
		// setup returns the arguments after --backend scripted.
		setup func(w *world) []string
		msg   string // stderr after "avenor: "; <root> is the world's root
	}{
		{"--prompt not UTF-8", func(w *world) []string {
			return []string{"--prompt", string([]byte("say hi\xff there"))}
		}, "--prompt" + notUTF8},
		{"--prompt-file not UTF-8", func(w *world) []string {
			return []string{"--prompt-file", w.writeFile("p.md", "say hi\xff there")}
		}, "--prompt-file <root>/p.md" + notUTF8},
		{"--prompt-file one byte over the limit", func(w *world) []string {
			return []string{"--prompt-file", w.writeFile("big.md", strings.Repeat("x", sdk.MaxPromptBytes+1))}
		}, "--prompt-file <root>/big.md" + tooLarge(sdk.MaxPromptBytes+1)},
		{"loop phase prompt_file not UTF-8", func(w *world) []string {
			w.writeFile("phase.md", "say hi\xff there")
			return []string{"--loop-file", w.writeFile("loop.json", `{"loop":[{"name":"l","prompt_file":"phase.md"}]}`)}
		}, `load loop config: loop config: phase[name l]: prompt_file "phase.md"` + notUTF8},
		{"--dir not UTF-8", func(w *world) []string {
			dir := w.path(string([]byte("d\xff")))
			if err := os.Mkdir(dir, 0o755); err != nil {
				w.t.Fatal(err)
			}
			return []string{"--prompt", "say hi", "--dir", dir}
		}, `--dir "<root>/d\xff" is not valid UTF-8; the directory is sent to the plugin as text: use a UTF-8 path (e.g. a symlink to it)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			args := append([]string{"--backend", "scripted", "--dir", w.work}, tc.setup(w)...)
			sent, evPath := w.path("run.done"), w.path("events.ndjson")
			res := w.run(append(args, "--sentinel-file", sent, "--on-event", evPath, "--run-id", "b")...)
			checkRefusal(t, res, strings.ReplaceAll(tc.msg, "<root>", w.root))
			if res.elapsed > 1500*time.Millisecond {
				t.Errorf("took %v: refused after launching the plugin, not in validation", res.elapsed)
			}
			checkSentinel(t, sent, validationSentinel(tc.msg, "b"))
			// A loop run opens its log before it loads its config (docs/run.md#lifecycle).
			if _, err := os.Stat(evPath); err == nil && !containsArg(args, "--loop-file") {
				t.Errorf("an event log was opened: the run went past validation")
			}
		})
	}
}

// TestPromptFileReadBounded: a 64 MiB --prompt-file is refused from its
// size, without reading it into memory; it used to be read whole, twice
// over (bytes and string: a 241 MiB peak). Not parallel: a child's
// ru_maxrss also counts the test binary's memory it shared until exec, so
// the peak is compared with that of a run refused without a file, measured
// the same way.
func TestPromptFileReadBounded(t *testing.T) {
	w := newWorld(t)
	huge := w.path("huge.md")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: NULs are valid UTF-8
		t.Fatal(err)
	}
	f.Close()
	peak := func(args ...string) (result, int64) {
		p := w.start(nil, append([]string{"--backend", "scripted", "--dir", w.work, "--run-id", "b"}, args...)...)
		res := p.wait()
		ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
		if !ok {
			t.Fatal("no rusage")
		}
		return res, ru.Maxrss << 10 // KiB on Linux
	}
	_, base := peak("--prompt", string([]byte("\xff")))
	sent := w.path("run.done")
	res, big := peak("--prompt-file", huge, "--sentinel-file", sent)
	checkRefusal(t, res, fmt.Sprintf("--prompt-file %s is %d bytes; a prompt is at most %d bytes (MaxPromptBytes): shorten it, or put the material in a file the agent reads",
		huge, 64<<20, sdk.MaxPromptBytes))
	t.Logf("peak RSS %d MiB refusing the 64 MiB file, %d MiB refusing a 1-byte prompt", big>>20, base>>20)
	if big-base > 16<<20 {
		t.Errorf("refusing a 64 MiB prompt file took %d MiB more than refusing a 1-byte prompt: it read the file", (big-base)>>20)
	}
	checkSentinel(t, sent, "FAILED\nSESSION=\nSTOP_REASON=exit_1\nEXIT_CODE=1\nRUN=b\n")
}

// TestPromptAtTheLimitReachesThePlugin: a prompt of exactly
// sdk.MaxPromptBytes crosses the real gRPC stream to the plugin and back, so
// the bound is one the wire really carries.
func TestPromptAtTheLimitReachesThePlugin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	text := strings.Repeat("y", sdk.MaxPromptBytes)
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "echo", "--dir", w.work, "--prompt-file", w.writeFile("max.md", text), "--on-event", evPath)
	if res.code != 0 {
		t.Fatalf("run: %v", tail(res.String(), 2000))
	}
	if out := lastSessionEnd(t, readEvents(t, evPath)).str("final_output"); !strings.Contains(out, text) {
		t.Fatalf("final_output is %d bytes, want it to echo the %d-byte prompt", len(out), len(text))
	}
}

// TestStablePromptBounds: stable refuses a spawn's prompt or a follow-up
// prompt over the limit as invalid params (-32602), a prompt_file whose
// content is over it as the spawn's own failure (-32000, as the original answers),
// each naming the limit; the supervisor goes on serving.
func TestStablePromptBounds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.startStable("promptbounds", nil)
	c := s.client()
	over := strings.Repeat("z", sdk.MaxPromptBytes+1)
	says := fmt.Sprintf("is %d bytes; a prompt is at most %d bytes (MaxPromptBytes)", sdk.MaxPromptBytes+1, sdk.MaxPromptBytes)
	big := w.writeFile("big.md", over)
	for _, tc := range []struct {
		name   string
		params map[string]any
		what   string
		code   string
	}{
		{"prompt_file", map[string]any{"backend": "scripted", "dir": w.work, "prompt_file": big}, "prompt_file " + big + " ", "-32000"},
		{"prompt", map[string]any{"backend": "scripted", "dir": w.work, "prompt": over}, "prompt ", "-32602"},
		{"prompt_file not UTF-8", map[string]any{"backend": "scripted", "dir": w.work, "prompt_file": w.writeFile("bad.md", "say\xff")},
			"prompt_file " + w.path("bad.md") + " is not valid UTF-8 (byte 0xff at offset 3)", "-32000"},
	} {
		_, err := spawnRaw(t, c, tc.params)
		want := tc.what
		if !strings.Contains(want, "UTF-8") {
			want += says
		}
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("spawn with an oversized %s: %v; want %s containing %q", tc.name, err, tc.code, want)
		}
	}
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Dir: w.work, Prompt: "say first\nsleep 2s"})
	var res map[string]any
	err := c.Call(ctxT(t, 30*time.Second), "prompt", map[string]any{"runtime_id": sp.RuntimeID, "text": over}, &res)
	if err == nil || !strings.Contains(err.Error(), "text "+says) || !strings.Contains(err.Error(), "-32602") {
		t.Errorf("prompt over the limit: %v; want invalid params (-32602) containing %q", err, "text "+says)
	}
	waitEnded(t, c, sp.RuntimeID, 20*time.Second)
}
