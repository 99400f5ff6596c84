package config

import (
	"errors"
	"strings"
)

var (
	// ErrUnknownKey reports a key no layer may set: a typo in a config file or
	// a flag key the caller does not map to a setting.
	ErrUnknownKey = errors.New("unknown key")

	// ErrInvalidValue reports a value of the wrong type or out of range.
	ErrInvalidValue = errors.New("invalid value")

	// ErrMalformedFile reports a config file that is not valid TOML.
	ErrMalformedFile = errors.New("malformed TOML")

	// ErrNoHome reports that the avenor directories cannot be located because
	// neither $HOME nor the XDG variable in question is set.
	ErrNoHome = errors.New("cannot locate the avenor directories")
)

// Error is a problem with one key (or a whole file) in one layer. It is the
// user's fault: the message names the file or variable, the key, and what is
// wrong with it.
type Error struct {
	Layer Layer  // which layer the bad value came from
	Path  string // the config file, for the user and project layers
	// Key as the user spelled it: a dotted key in a file ("backends.pi.env"),
	// a variable name ("AVENOR_TIMEOUT") or a flag ("--timeout"). Empty when
	// the whole file is at fault.
	Key string
	Err error // wraps ErrUnknownKey, ErrInvalidValue or ErrMalformedFile
}

func (e *Error) Error() string {
	var b strings.Builder
	switch e.Layer {
	case LayerUser, LayerProject:
		b.WriteString("config ")
		b.WriteString(e.Path)
	case LayerEnv:
		b.WriteString("environment")
	case LayerFlag:
		b.WriteString("flag")
	default:
		b.WriteString(string(e.Layer))
	}
	if e.Key != "" {
		if e.Layer == LayerEnv || e.Layer == LayerFlag {
			b.WriteString(" ")
		} else {
			b.WriteString(": ")
		}
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// detailError carries a precise message while matching one of the sentinels,
// so that messages read `invalid duration "soon"` rather than
// `invalid value: invalid duration "soon"`.
type detailError struct {
	msg  string
	kind error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.kind }
