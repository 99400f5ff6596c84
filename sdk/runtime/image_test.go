package runtime

import (
	"strings"
	"testing"
)

func TestSniffImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
		want string
	}{
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\x0d", "image/png"},
		{"jpeg", "\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"},
		{"gif87", "GIF87a\x01\x00", "image/gif"},
		{"gif89", "GIF89a\x01\x00", "image/gif"},
		{"webp", "RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"riff not webp", "RIFF\x10\x00\x00\x00WAVEfmt ", ""},
		{"short webp", "RIFF\x10\x00", ""},
		{"png cut short", "\x89PNG\r\n", ""},
		{"text", "hello, world", ""},
		{"svg", "<svg xmlns=", ""},
		{"empty", "", ""},
	} {
		if got := SniffImage([]byte(tc.head)); got != tc.want {
			t.Errorf("%s: SniffImage = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCheckImages(t *testing.T) {
	img := []Image{{Path: "/x.png", MediaType: "image/png"}}
	without := BackendInfo{Name: "b", Capabilities: Supports(CapPrompt)}
	with := BackendInfo{Name: "b", Capabilities: Supports(CapPrompt, CapImages)}
	if err := CheckImages(without, nil); err != nil {
		t.Errorf("no images refused: %v", err)
	}
	if err := CheckImages(without, img); err == nil || !strings.Contains(err.Error(), `backend "b" does not take images`) {
		t.Errorf("images to a backend without them: %v", err)
	}
	if err := CheckImages(with, img); err != nil {
		t.Errorf("images to a backend that takes them: %v", err)
	}
	if err := CheckImages(BackendInfo{Name: "b", Capabilities: Supports(CapPrompt).With(CapImages, Experimental)}, img); err == nil {
		t.Error("an experimental images capability took images: only supported does")
	}
}
