package regularfile

import (
	"errors"
	"fmt"
	"io"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ErrTooLarge is wrapped by ReadFileMax's refusal of a file over its limit.
var ErrTooLarge = errors.New("file too large")

// TooLargeError is ReadFileMax's refusal; it matches ErrTooLarge.
type TooLargeError struct {
	Path  string
	Size  int64 // the size seen: the file's, or at least Max+1 when it grew while read
	Max   int64
	Exact bool // Size is the file's size, not a lower bound
}

func (e *TooLargeError) Error() string {
	more := ""
	if !e.Exact {
		more = "more than "
	}
	return fmt.Sprintf("%s is %s%d bytes, over the limit of %d", e.Path, more, e.Size, e.Max)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadFileMax is ReadFile for a file of at most max bytes. A larger file is
// refused from its size before a byte is read, and one that grows while it
// is read stops at max+1 bytes: memory stays bounded by max whatever the
// file holds.
func ReadFileMax(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Max: max, Exact: true}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Size: int64(len(data)), Max: max}
	}
	return data, nil
}

// ReadPrompt reads a prompt file: a regular file of at most
// sdk.MaxPromptBytes (read bounded, see ReadFileMax) holding UTF-8 text.
// what names the file in the refusal, e.g. "--prompt-file x.md"; the error
// of a file too large or not UTF-8 is an *sdk.PromptError.
func ReadPrompt(path, what string) (string, error) {
	data, err := ReadFileMax(path, sdk.MaxPromptBytes)
	var big *TooLargeError
	if errors.As(err, &big) {
		return "", sdk.TooLargePrompt(what, big.Size)
	}
	if err != nil {
		return "", err
	}
	text := string(data)
	if err := sdk.CheckPrompt(what, text); err != nil {
		return "", err
	}
	return text, nil
}
