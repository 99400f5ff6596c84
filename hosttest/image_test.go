package hosttest

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/client"
)

// pngBytes is a PNG file's signature followed by n bytes of padding: all
// the host checks is the type its first bytes say and its size.
func pngBytes(n int) []byte {
	return append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"), make([]byte, n)...)
}

// TestImageGoesWithThePrompt: --image files, checked by the host, reach a
// backend that takes images with their media types (the scripted backend
// reads each one).
func TestImageGoesWithThePrompt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	png, jpg := w.path("shot.png"), w.path("photo.bin")
	if err := os.WriteFile(png, pngBytes(100), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpg, append([]byte{0xff, 0xd8, 0xff, 0xe0}, make([]byte, 50)...), 0o600); err != nil {
		t.Fatal(err)
	}
	evPath := w.path("events.ndjson")
	res := w.run("--backend", "scripted", "--on-event", evPath, "--image", png, "--image", jpg, "--prompt", "images")
	if res.code != 0 {
		t.Fatalf("run: %v", res)
	}
	want := "image image/png 116 bytes\nimage image/jpeg 54 bytes\n2 images"
	if end := lastSessionEnd(t, readEvents(t, evPath)); end.str("final_output") != want {
		t.Fatalf("the backend got %q, want %q", end.str("final_output"), want)
	}
}

// TestImageRefusedBeforeStart: an image the runtimes cannot take, or a
// backend without image input, is refused before anything runs: exit 1,
// a message naming the file and the fix, no session.
func TestImageRefusedBeforeStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good, text, big, empty := w.path("ok.png"), w.path("notes.png"), w.path("big.png"), w.path("empty.png")
	for path, data := range map[string][]byte{
		good: pngBytes(10), text: []byte("just some text, named like an image"),
		big: pngBytes(5<<20 + 1), empty: nil,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	many := []string{}
	for range 9 {
		many = append(many, "--image", good)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not an image", []string{"--backend", "scripted", "--image", text}, "not an image of a type the runtimes take"},
		{"too large", []string{"--backend", "scripted", "--image", big}, "over the limit of 5242880"},
		{"empty", []string{"--backend", "scripted", "--image", empty}, "the file is empty"},
		{"missing", []string{"--backend", "scripted", "--image", w.path("nope.png")}, "no such file"},
		{"a directory", []string{"--backend", "scripted", "--image", w.root}, "not a regular file"},
		{"too many", append([]string{"--backend", "scripted"}, many...), "9 images is over the limit of 8"},
		{"backend without images", []string{"--backend", "echo", "--image", good}, `backend "echo" does not take images`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evPath := w.path(strings.ReplaceAll(tc.name, " ", "-") + ".ndjson")
			res := w.run(append(tc.args, "--on-event", evPath, "--prompt", "images")...)
			if res.code != 1 || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("want exit 1 saying %q, got %v", tc.want, res)
			}
			if b, _ := os.ReadFile(evPath); strings.Contains(string(b), `"session.start"`) {
				t.Errorf("a session started:\n%s", b)
			}
		})
	}
}

// TestSpawnImages: a stable spawn's images reach the runtime as --image's
// do; a spawn whose image is not one is refused, nothing started.
func TestSpawnImages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	png, txt := w.path("shot.png"), w.path("notes.png")
	if err := os.WriteFile(png, pngBytes(20), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(txt, []byte("not a picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	sup := w.startStable("img", nil)
	c := sup.client()
	ctx := ctxT(t, 30*time.Second)
	ev := w.path("rt.ndjson")
	sp := spawn(t, c, client.SpawnParams{Backend: "scripted", Prompt: "images", Images: []string{png}, Dir: w.work, OnEvent: ev})
	end := waitEvent(t, ev, 15*time.Second, "the turn's end", func(e event) bool { return e.name() == "session.end" })
	if end.str("final_output") != "image image/png 36 bytes\n1 images" {
		t.Errorf("runtime %s got %q", sp.RuntimeID, end.str("final_output"))
	}
	_, err := c.Spawn(ctx, client.SpawnParams{Backend: "scripted", Prompt: "images", Images: []string{txt}, Dir: w.work})
	if err == nil || !strings.Contains(err.Error(), "images "+txt+": not an image") {
		t.Errorf("a spawn of a text file as an image: %v", err)
	}
}
