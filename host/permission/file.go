package permission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Defaults of the file handler (contract §4.1).
const (
	DefaultPollInterval = 500 * time.Millisecond
	DefaultTimeout      = 10 * time.Minute
)

// FileOptions tunes a FileHandler. The zero value is the contract's.
type FileOptions struct {
	// PollInterval is how often <base>.req.response is read; default
	// DefaultPollInterval (500 ms).
	PollInterval time.Duration
	// Timeout is how long a request waits for its response before the
	// handler fails; default DefaultTimeout (10 min).
	Timeout time.Duration
}

func (o FileOptions) withDefaults() FileOptions {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// FileRequest is the content of <base>.req (contract §4.1). Only
// request_id is always written.
type FileRequest struct {
	RequestID string                 `json:"request_id"`
	SessionID string                 `json:"session_id,omitempty"`
	Tool      string                 `json:"tool,omitempty"`
	Question  string                 `json:"question,omitempty"`
	Options   []sdk.PermissionOption `json:"options,omitempty"`
	// Payload holds all fields of the permission.request event.
	Payload map[string]any `json:"payload,omitempty"`
}

// NewFileRequest is the .req of a request announced by ev (its
// permission.request event): the question falls back to the event's
// "message" field.
func NewFileRequest(req sdk.PermissionRequest, sessionID string, ev event.Event) FileRequest {
	fr := FileRequest{
		RequestID: req.ID, SessionID: sessionID, Tool: req.Tool, Question: req.Question,
		Options: req.Options, Payload: ev,
	}
	if fr.Question == "" {
		fr.Question, _ = ev["message"].(string)
	}
	if len(fr.Payload) == 0 {
		fr.Payload = nil
	}
	return fr
}

// Encode returns the exact bytes of the .req: JSON indented by two spaces,
// with a trailing newline; <, > and & are written as they are, so a command
// in the payload stays readable.
func (r FileRequest) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode permission request %s: %w", r.RequestID, err)
	}
	return buf.Bytes(), nil
}

// FileHandler is the file protocol of contract §4.1 on one base path.
type FileHandler struct {
	base string
	opts FileOptions
}

// NewFileHandler returns the handler of base (<base>.req, <base>.req.response).
func NewFileHandler(base string, o FileOptions) *FileHandler {
	return &FileHandler{base: base, opts: o.withDefaults()}
}

// ReqPath is <base>.req.
func (h *FileHandler) ReqPath() string { return h.base + ReqSuffix }

// ResponsePath is <base>.req.response.
func (h *FileHandler) ResponsePath() string { return h.base + ResponseSuffix }

// Ask publishes r and waits for its answer: it removes a stale
// <base>.req.response, writes <base>.req atomically (mode 0600, through
// <base>.req.tmp), then reads the response every PollInterval until it holds
// a valid answer, Timeout passes, or ctx is done. On every path but a valid
// answer it removes <base>.req, so a harness never answers a request nobody
// waits for. Errors say "permission handler: …"; ctx's own error is
// returned as is.
func (h *FileHandler) Ask(ctx context.Context, r FileRequest) (Answer, error) {
	a, err := h.ask(ctx, r)
	if err != nil {
		if rerr := os.Remove(h.ReqPath()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && ctx.Err() == nil {
			err = fmt.Errorf("%w (and removing %s: %v)", err, h.ReqPath(), rerr)
		}
		if ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		return Answer{}, fmt.Errorf("permission handler: %w", err)
	}
	return a, nil
}

func (h *FileHandler) ask(ctx context.Context, r FileRequest) (Answer, error) {
	if err := os.Remove(h.ResponsePath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Answer{}, fmt.Errorf("remove stale response: %w", err)
	}
	data, err := r.Encode()
	if err != nil {
		return Answer{}, err
	}
	if err := writeAtomic(h.ReqPath(), h.base+reqTmpSuffix, data); err != nil {
		return Answer{}, err
	}

	deadline := time.NewTimer(h.opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		case <-deadline.C:
			return Answer{}, failure(ErrFileTimeout, "no answer to request %s in %s within %s", r.RequestID, h.ResponsePath(), h.opts.Timeout)
		case <-tick.C:
		}
		a, err := h.read(r.Options)
		switch {
		case err == nil:
			return a, nil
		case errors.Is(err, errNotWritten):
			continue
		default:
			return Answer{}, err
		}
	}
}

// read reads and validates the response; errNotWritten while it is absent,
// empty or incomplete.
func (h *FileHandler) read(options []sdk.PermissionOption) (Answer, error) {
	f, err := os.Open(h.ResponsePath())
	if errors.Is(err, fs.ErrNotExist) {
		return Answer{}, errNotWritten
	}
	if err != nil {
		return Answer{}, fmt.Errorf("read response: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxResponseBytes+1))
	if err != nil {
		return Answer{}, fmt.Errorf("read response %s: %w", h.ResponsePath(), err)
	}
	if len(data) > maxResponseBytes {
		return Answer{}, invalid(ErrResponseTooBig, "response %s is larger than %d bytes", h.ResponsePath(), maxResponseBytes)
	}
	a, err := ParseResponse(data, options)
	if err != nil && !errors.Is(err, errNotWritten) {
		return Answer{}, fmt.Errorf("response %s: %w", h.ResponsePath(), err)
	}
	return a, err
}

// writeAtomic writes data to tmp (mode 0600), syncs it and renames it to
// path; tmp never stays behind.
func writeAtomic(path, tmp string, data []byte) (err error) {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write request %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write request: %w", err)
	}
	return nil
}
