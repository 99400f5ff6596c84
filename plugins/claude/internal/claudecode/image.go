package claudecode

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// imageBlocks are the prompt's images as the stream-JSON user message's
// image content blocks (base64, with their media type), before its text.
// Each file is read again here and checked as the host checked it — at
// most runtime.MaxImageBytes, of the type its first bytes say — so a file
// changed since is refused rather than sent as something else.
func imageBlocks(images []runtime.Image) ([]any, error) {
	out := make([]any, 0, len(images)+1)
	for _, im := range images {
		data, err := readImage(im.Path)
		if err != nil {
			return nil, runtime.Errorf(runtime.FaultUser, "image %s: %v", im.Path, err)
		}
		if mt := runtime.SniffImage(data); mt == "" || mt != im.MediaType {
			return nil, runtime.Errorf(runtime.FaultUser, "image %s: its content is no longer the %s it was checked as", im.Path, im.MediaType)
		}
		out = append(out, map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": im.MediaType, "data": base64.StdEncoding.EncodeToString(data)}})
	}
	return out, nil
}

func readImage(path string) ([]byte, error) {
	// Without blocking: a named pipe put there since must not hang the turn.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, runtime.MaxImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > runtime.MaxImageBytes {
		return nil, fmt.Errorf("over the limit of %d bytes", runtime.MaxImageBytes)
	}
	return data, nil
}
