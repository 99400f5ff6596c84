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
	"syscall"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
	"github.com/avenor-go/avenor/sdk/safefile"
)

// Defaults of the file handler (docs/permission-handler.md#the-file-handler).
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
	// Warn hears about a <base>.req.response the handler ignores (not a
	// regular file, or the answer of another request); nil: nobody does.
	Warn func(message string)
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

// FileRequest is the content of <base>.req (docs/permission-handler.md#the-file-handler). Only
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

// FileHandler is the file protocol of docs/permission-handler.md#the-file-handler on one base path.
type FileHandler struct {
	base string
	opts FileOptions
}

// NewFileHandler returns the handler of base (<base>.req, <base>.req.response).
func NewFileHandler(base string, o FileOptions) *FileHandler {
	return &FileHandler{base: base, opts: o.withDefaults()}
}

// warnTo returns a handler of the same base whose warnings also go to
// warn (after Options.Warn, when set).
func (h *FileHandler) warnTo(warn func(string)) *FileHandler {
	o := h.opts
	if prev := o.Warn; prev != nil {
		o.Warn = func(msg string) { prev(msg); warn(msg) }
	} else {
		o.Warn = warn
	}
	return &FileHandler{base: h.base, opts: o}
}

// ReqPath is <base>.req.
func (h *FileHandler) ReqPath() string { return h.base + ReqSuffix }

// ResponsePath is <base>.req.response.
func (h *FileHandler) ResponsePath() string { return h.base + ResponseSuffix }

// Ask publishes r and waits for its answer: it removes a stale
// <base>.req.response, writes <base>.req atomically (mode 0600, through
// <base>.req.tmp-<random>), then reads the response every PollInterval until it holds
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
	if err := writeAtomic(h.ReqPath(), data); err != nil {
		return Answer{}, err
	}

	deadline := time.NewTimer(h.opts.Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	warned := ""
	for {
		select {
		case <-ctx.Done():
			return Answer{}, ctx.Err()
		case <-deadline.C:
			return Answer{}, failure(ErrFileTimeout, "no answer to request %s in %s within %s", r.RequestID, h.ResponsePath(), h.opts.Timeout)
		case <-tick.C:
		}
		a, err := h.read(r)
		var ign *ignoredError
		switch {
		case err == nil:
			return a, nil
		case errors.As(err, &ign):
			// Said once per distinct reason, not every poll.
			if ign.msg != warned && h.opts.Warn != nil {
				h.opts.Warn(ign.msg)
			}
			warned = ign.msg
		case errors.Is(err, errNotWritten):
			warned = "" // a response written again is worth a word again
		default:
			return Answer{}, err
		}
	}
}

// ignoredError is a response the handler does not take and keeps waiting
// past: it is not a regular file, or it answers another request. The
// harness can replace it (rename an answer over it, or `avenor answer
// --force`); the handler never removes it, so a correct answer that lands
// between a read and a removal is never lost.
type ignoredError struct{ msg string }

func (e *ignoredError) Error() string { return e.msg }

// read reads and validates the response of r: errNotWritten while it is
// absent, empty or incomplete; an *ignoredError while it is not a regular
// file, names another request, or is not to be trusted (see untrusted: a
// symlink, another user's file, a directory others may write). It opens without blocking (O_NONBLOCK), so
// a named pipe put there can never hang the handler past its timeout.
func (h *FileHandler) read(r FileRequest) (Answer, error) {
	var lst syscall.Stat_t
	if err := syscall.Lstat(h.ResponsePath(), &lst); errors.Is(err, syscall.ENOENT) {
		return Answer{}, errNotWritten
	}
	f, err := regularfile.Open(h.ResponsePath())
	if errors.Is(err, fs.ErrNotExist) {
		if lst.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return Answer{}, &ignoredError{fmt.Sprintf("permission response %s is a symbolic link (to nothing); ignored, still waiting for request %s", h.ResponsePath(), r.RequestID)}
		}
		return Answer{}, errNotWritten
	}
	var nr *regularfile.NotRegularError
	if errors.As(err, &nr) {
		return Answer{}, &ignoredError{fmt.Sprintf("permission response %s is %s, not a regular file; ignored, still waiting for request %s (write the answer to a regular file and rename it into place)", nr.Path, nr.What, r.RequestID)}
	}
	if err != nil {
		return Answer{}, fmt.Errorf("read response: %w", err)
	}
	defer f.Close()
	if why := untrusted(h.ResponsePath(), &lst, f, r.RequestID); why != "" {
		return Answer{}, &ignoredError{why}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxResponseBytes+1))
	if err != nil {
		return Answer{}, fmt.Errorf("read response %s: %w", h.ResponsePath(), err)
	}
	if len(data) > maxResponseBytes {
		return Answer{}, invalid(ErrResponseTooBig, "response %s is larger than %d bytes", h.ResponsePath(), maxResponseBytes)
	}
	a, id, err := parseResponse(data, r.Options)
	if id != "" && id != r.RequestID {
		// A late answer to an earlier request must never decide this one,
		// even when it would not be valid here.
		return Answer{}, &ignoredError{fmt.Sprintf("permission response %s answers request %q, not the pending request %q; ignored, still waiting (write an answer whose request_id is %q, or none)",
			h.ResponsePath(), sdk.Truncate(id, 80), r.RequestID, r.RequestID)}
	}
	if err != nil && !errors.Is(err, errNotWritten) {
		return Answer{}, fmt.Errorf("response %s: %w", h.ResponsePath(), err)
	}
	return a, err
}

// writeAtomic writes data to path (mode 0600) through a temporary
// <path>.tmp-<random> created O_EXCL|O_NOFOLLOW, synced and renamed: a fixed
// temporary name in a directory another user can write let them plant a
// symlink that root would truncate, chmod and fill (safefile.WriteFile
// refuses such a directory outright, and the random name is never
// followed). The temporary file never stays behind.
func writeAtomic(path string, data []byte) error {
	if err := safefile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write request %s: %w", path, err)
	}
	return nil
}
