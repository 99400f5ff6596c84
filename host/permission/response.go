package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// Bounds of an answer (docs/permission-handler.md#the-file-handler).
const (
	// MaxMessageBytes bounds an answer's message: 64 KiB of UTF-8.
	MaxMessageBytes = 64 << 10
	// maxResponseBytes bounds a .req.response file: the largest message,
	// fully \u-escaped, and room for the rest.
	maxResponseBytes = 6*MaxMessageBytes + 4096
)

// Answer is a decision given by a person or a program: the shape of
// <base>.req.response, {"outcome":"selected","option_id":"allow","message":"…"}.
type Answer struct {
	// Outcome is selected (the default when empty) or cancelled; cancelled
	// cancels the run.
	Outcome string `json:"outcome"`
	// OptionID is one of the request's optionIds; required when selected.
	OptionID string `json:"option_id"`
	// Message is relayed to the backend: valid UTF-8, at most 64 KiB,
	// required when the option has requiresMessage.
	Message string `json:"message"`
	// RequestID, when set, is the request this answer is for: the file
	// handler ignores a response naming another request (a late answer to
	// an earlier one). Empty: the pending request, whichever it is.
	RequestID string `json:"request_id,omitempty"`
	// Source, when set, is permission.response's source for an answer
	// delivered through Broker.Answer (one of AnswerSources); empty means
	// "control". Never read from a response file: the file handler's
	// answers always say "file".
	Source string `json:"-"`
}

// errNotWritten: the response file is empty or not complete JSON yet; the
// file handler keeps polling.
var errNotWritten = errors.New("response not written yet")

// ParseResponse reads the bytes of a .req.response and validates them
// against the request's options with the rules of ValidateAnswer. An empty
// file, or one holding only the beginning of a JSON object, is not written
// yet (errNotWritten). Every other problem is an ErrInvalid error whose
// message says what was wrong. The optional request_id is returned in the
// Answer; matching it to the pending request is the file handler's job.
func ParseResponse(data []byte, options []sdk.PermissionOption) (Answer, error) {
	a, _, err := parseResponse(data, options)
	return a, err
}

// parseResponse is ParseResponse that also returns the response's
// request_id whenever the JSON object decoded, even when the answer is not
// valid for options: an answer meant for another request is refused for
// that reason first.
func parseResponse(data []byte, options []sdk.PermissionOption) (Answer, string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return Answer{}, "", errNotWritten
	}
	if trimmed[0] != '{' {
		return Answer{}, "", invalid(ErrBadResponse, "response is not a JSON object {\"outcome\",\"option_id\",\"message\"}")
	}
	var raw struct {
		Outcome   *string         `json:"outcome"`
		OptionID  *string         `json:"option_id"`
		Message   json.RawMessage `json:"message"`
		RequestID *string         `json:"request_id"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return Answer{}, "", errNotWritten
		}
		return Answer{}, "", invalid(ErrBadResponse, "response is not a JSON object {\"outcome\",\"option_id\",\"message\"}: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Answer{}, "", invalid(ErrBadResponse, "response has data after its JSON object")
	}
	var a Answer
	if raw.RequestID != nil {
		a.RequestID = *raw.RequestID
	}
	if raw.Outcome != nil {
		a.Outcome = *raw.Outcome
	}
	if raw.OptionID != nil {
		a.OptionID = *raw.OptionID
	}
	if len(raw.Message) > 0 && string(raw.Message) != "null" {
		if !validJSONStringUTF8(raw.Message) {
			return Answer{}, a.RequestID, invalid(ErrMessageNotUTF8, "message is not valid UTF-8")
		}
		if err := json.Unmarshal(raw.Message, &a.Message); err != nil {
			return Answer{}, a.RequestID, invalid(ErrBadResponse, "message is not a string: %s", sdk.Truncate(string(raw.Message), 40))
		}
	}
	id := a.RequestID
	a, err := ValidateAnswer(a, options)
	return a, id, err
}

// ValidateAnswer checks an answer against the offered options (contract
// docs/permission-handler.md#the-file-handler) and returns it with its outcome defaulted to selected:
//   - outcome must be selected, cancelled or empty;
//   - message must be valid UTF-8 of at most 64 KiB;
//   - when selected: option_id must be offered, its kind allow- or
//     reject-like, and the message non-empty if the option requires one.
//
// A cancelled answer needs no option.
func ValidateAnswer(a Answer, options []sdk.PermissionOption) (Answer, error) {
	switch a.Outcome {
	case "":
		a.Outcome = sdk.OutcomeSelected
	case sdk.OutcomeSelected, sdk.OutcomeCancelled:
	default:
		return Answer{}, invalid(ErrBadOutcome, "outcome %q is neither selected nor cancelled", sdk.Truncate(a.Outcome, 40))
	}
	if !utf8.ValidString(a.Message) {
		return Answer{}, invalid(ErrMessageNotUTF8, "message is not valid UTF-8")
	}
	if len(a.Message) > MaxMessageBytes {
		return Answer{}, invalid(ErrMessageTooLong, "message is %d bytes; at most %d are allowed", len(a.Message), MaxMessageBytes)
	}
	if a.Outcome == sdk.OutcomeCancelled {
		return a, nil
	}
	opt, err := offered(a.OptionID, options)
	if err != nil {
		return Answer{}, err
	}
	if sdk.NormalizeKind(opt.Kind) == "unknown" {
		return Answer{}, invalid(ErrBadKind, "option %q has kind %q, which is neither allow nor reject", opt.ID, opt.Kind)
	}
	if opt.RequiresMessage && a.Message == "" {
		return Answer{}, invalid(ErrMessageRequired, "option %q requires a message", opt.ID)
	}
	return a, nil
}

// offered finds id among the options, or says which ones there are.
func offered(id string, options []sdk.PermissionOption) (sdk.PermissionOption, error) {
	var valid []string
	for _, o := range options {
		if o.ID == "" {
			continue
		}
		if o.ID == id {
			return o, nil
		}
		valid = append(valid, o.ID)
	}
	if len(valid) == 0 {
		return sdk.PermissionOption{}, invalid(ErrUnknownOption, "option %q is not in the offered set; no options were offered", sdk.Truncate(id, 80))
	}
	return sdk.PermissionOption{}, invalid(ErrUnknownOption, "option %q is not in the offered set; valid options: %s", sdk.Truncate(id, 80), strings.Join(valid, ", "))
}

// validJSONStringUTF8 reports whether a JSON string literal is valid UTF-8
// both as bytes and through its \u escapes: encoding/json would silently
// turn invalid bytes and unpaired surrogates into U+FFFD.
func validJSONStringUTF8(lit []byte) bool {
	if !utf8.Valid(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' || i+1 >= len(lit) {
			continue
		}
		if lit[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(lit, i+2)
		if !ok {
			return true // malformed: json.Unmarshal reports it
		}
		i += 5
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate alone
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 >= len(lit) || lit[i+1] != '\\' || lit[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(lit, i+3)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	return rune(n), err == nil
}
