package runtime

import (
	"bytes"
	"fmt"
)

// CapImages: the backend gives its runtime image files with a prompt
// natively (Turn.Images); a backend that does not declare it is never sent
// one, and the host refuses --image for it before anything starts.
const CapImages Capability = "images"

// Image is an image file that goes with a prompt: an absolute path the
// plugin can read and its media type, both checked by the host.
type Image struct {
	Path      string `json:"path"`
	MediaType string `json:"media_type"`
}

// Bounds of the images of one prompt (docs/configuration.md#bounds).
const (
	// MaxImages bounds the images of one prompt.
	MaxImages = 8
	// MaxImageBytes bounds one image file: what the runtimes' providers
	// take in one image (Anthropic's API: 5 MiB).
	MaxImageBytes = 5 << 20
)

// ImageMediaTypes are the types an image may have, told apart by the
// file's first bytes.
var ImageMediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// SniffImage returns the media type that head — the first bytes of a file,
// at least 12 for webp — begins with, or "" when it is none of
// ImageMediaTypes. It trusts no file name.
func SniffImage(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte{0xff, 0xd8, 0xff}):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}

// CheckImages refuses images a backend does not declare it takes.
func CheckImages(info BackendInfo, images []Image) error {
	if len(images) > 0 && info.Capability(CapImages) != Supported {
		return fmt.Errorf("backend %q does not take images (--image, spawn images): its runtime has no native image input here; "+
			"describe the image in the prompt, or pick a backend whose images capability is supported (avenor backends)", info.Name)
	}
	return nil
}
