package run

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// LoadImages checks the image files of --image (or a spawn's images)
// before anything starts: at most sdk.MaxImages, each a readable regular
// file of at most sdk.MaxImageBytes whose first bytes are PNG, JPEG, GIF or
// WebP (the name is not trusted). It returns them with absolute paths, as
// the plugin reads them. Errors name the flag, the file and the fix.
func LoadImages(flag string, paths []string) ([]sdk.Image, error) {
	if len(paths) > sdk.MaxImages {
		return nil, fmt.Errorf("%s: %d images is over the limit of %d per prompt", flag, len(paths), sdk.MaxImages)
	}
	out := make([]sdk.Image, 0, len(paths))
	for _, p := range paths {
		im, err := loadImage(p)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, p, err)
		}
		out = append(out, im)
	}
	return out, nil
}

func loadImage(path string) (sdk.Image, error) {
	if strings.TrimSpace(path) == "" {
		return sdk.Image{}, errors.New("empty path: name an image file")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return sdk.Image{}, err
	}
	f, err := regularfile.Open(abs) // a named pipe must not hang the run
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sdk.Image{}, errors.New("no such file")
	case err != nil:
		return sdk.Image{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return sdk.Image{}, err
	}
	switch {
	case st.Size() == 0:
		return sdk.Image{}, errors.New("the file is empty, not an image")
	case st.Size() > sdk.MaxImageBytes:
		return sdk.Image{}, fmt.Errorf("the image is %d bytes, over the limit of %d (%d MiB): make it smaller", st.Size(), sdk.MaxImageBytes, sdk.MaxImageBytes>>20)
	}
	head := make([]byte, 12)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return sdk.Image{}, fmt.Errorf("read: %w", err)
	}
	mt := sdk.SniffImage(head[:n])
	if mt == "" {
		return sdk.Image{}, fmt.Errorf("not an image of a type the runtimes take (%s, told by its first bytes, not its name)", strings.Join(sdk.ImageMediaTypes, ", "))
	}
	return sdk.Image{Path: abs, MediaType: mt}, nil
}
