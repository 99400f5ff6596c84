package permission

import (
	"errors"
	"fmt"
)

// Errors of the package. Validation errors (a bad answer, a bad request
// file, an option not offered…) also match ErrInvalid: they are the user's
// fault, and `avenor answer` exits 2 on them.
var (
	// ErrInvalid matches every validation error below.
	ErrInvalid = errors.New("invalid permission answer or request")

	// ErrAlreadyPending: a second request arrived while one was pending in
	// the same session (docs/permission-handler.md#precedence). It fails the attempt.
	ErrAlreadyPending = errors.New("another permission request is already pending")
	// ErrMissingRequestID: the backend raised a request without an id; it
	// is reported and stays waiting until the turn ends.
	ErrMissingRequestID = errors.New("permission.request missing request_id")
	// ErrFileTimeout: nobody wrote <base>.req.response in time.
	ErrFileTimeout = errors.New("no permission response in time")
	// ErrNotPending: an answer names a request that is not pending.
	ErrNotPending = errors.New("no such pending permission request")
	// ErrAlreadyAnswered: a second answer for a request already answered.
	ErrAlreadyAnswered = errors.New("permission request already answered")
	// ErrHandlerScheme: --permission-handler is not file:<path>.
	ErrHandlerScheme = errors.New("--permission-handler supports file:<path> only")

	ErrUnknownOption   = errors.New("option not offered")
	ErrBadKind         = errors.New("option kind is neither allow nor reject")
	ErrBadOutcome      = errors.New("outcome is neither selected nor cancelled")
	ErrMessageTooLong  = errors.New("message too long")
	ErrMessageNotUTF8  = errors.New("message is not valid UTF-8")
	ErrMessageRequired = errors.New("message required")
	ErrBadResponse     = errors.New("response is not a valid JSON object")
	ErrResponseTooBig  = errors.New("response file too big")
	ErrNoRequestFile   = errors.New("request file does not exist")
	ErrBadRequestFile  = errors.New("request file is not valid")
	ErrResponseExists  = errors.New("response already exists")
)

// detailError is an error whose message is written for the user and
// which matches its kinds (a sentinel above, and ErrInvalid for validation
// errors).
type detailError struct {
	kinds []error
	msg   string
}

func (e *detailError) Error() string   { return e.msg }
func (e *detailError) Unwrap() []error { return e.kinds }

// invalid is a validation error of the given kind.
func invalid(kind error, format string, args ...any) error {
	return &detailError{kinds: []error{kind, ErrInvalid}, msg: fmt.Sprintf(format, args...)}
}

// failure is an error of the given kind that is not the user's input.
func failure(kind error, format string, args ...any) error {
	return &detailError{kinds: []error{kind}, msg: fmt.Sprintf(format, args...)}
}
