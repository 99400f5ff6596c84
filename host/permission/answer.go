package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ReadRequest reads and parses <base>.req. A missing file is
// ErrNoRequestFile, a file that is not a request ErrBadRequestFile (both
// ErrInvalid); other errors are I/O errors. Options without an optionId are
// dropped.
func ReadRequest(base string) (FileRequest, error) {
	path := base + ReqSuffix
	data, err := regularfile.ReadFile(path) // a named pipe there must not hang `avenor answer`
	if errors.Is(err, fs.ErrNotExist) {
		return FileRequest{}, invalid(ErrNoRequestFile, "request file %s does not exist", path)
	}
	if errors.Is(err, regularfile.ErrNotRegular) {
		return FileRequest{}, invalid(ErrBadRequestFile, "request file %v", err)
	}
	if err != nil {
		return FileRequest{}, fmt.Errorf("read request file: %w", err)
	}
	var r FileRequest
	if err := json.Unmarshal(data, &r); err != nil {
		return FileRequest{}, invalid(ErrBadRequestFile, "parse request file %s: %v", path, err)
	}
	if r.RequestID == "" {
		return FileRequest{}, invalid(ErrBadRequestFile, "request file %s has no request_id", path)
	}
	opts := r.Options[:0]
	for _, o := range r.Options {
		if o.ID != "" {
			opts = append(opts, o)
		}
	}
	r.Options = opts
	return r, nil
}

// WriteAnswer is `avenor answer` (docs/permission-handler.md#avenor-answer): it validates a against
// <base>.req — outcome, option offered, message — and writes
// <base>.req.response atomically: a temporary file in the same directory,
// then a hard link that refuses to replace an existing response, or with
// force a rename over it. The response carries the .req's request_id. It returns the response path. Validation errors
// match ErrInvalid; others are I/O errors.
func WriteAnswer(base string, a Answer, force bool) (string, error) {
	resp := base + ResponseSuffix
	if a.Outcome == "" {
		a.Outcome = sdk.OutcomeSelected
	}
	if a.Outcome != sdk.OutcomeSelected && a.Outcome != sdk.OutcomeCancelled {
		return resp, invalid(ErrBadOutcome, "outcome %q is neither selected nor cancelled", a.Outcome)
	}
	req, err := ReadRequest(base)
	if err != nil {
		return resp, err
	}
	// Even a cancelled answer names an offered option.
	if _, err := offered(a.OptionID, req.Options); err != nil {
		return resp, err
	}
	if a, err = ValidateAnswer(a, req.Options); err != nil {
		return resp, err
	}
	// The response names its request, so the handler never applies it to
	// a later request that replaced this .req meanwhile.
	a.RequestID = req.RequestID
	if !force {
		if _, err := os.Lstat(resp); err == nil {
			return resp, existsError(resp)
		}
	}

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(a); err != nil {
		return resp, fmt.Errorf("encode response: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(resp), filepath.Base(resp)+".tmp*")
	if err != nil {
		return resp, fmt.Errorf("write response: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a link or a failure; gone after a rename
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return resp, fmt.Errorf("write response %s: %w", tmp.Name(), err)
	}
	if force {
		if err := os.Rename(tmp.Name(), resp); err != nil {
			return resp, fmt.Errorf("write response: %w", err)
		}
		return resp, nil
	}
	if err := os.Link(tmp.Name(), resp); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return resp, existsError(resp)
		}
		return resp, fmt.Errorf("write response: %w", err)
	}
	return resp, nil
}

func existsError(path string) error {
	return invalid(ErrResponseExists, "response already exists at %s; pass --force to overwrite", path)
}
