package runtime

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// MaxPromptBytes bounds the text of one prompt (a turn), in bytes. A prompt
// travels to the plugin in one gRPC message (Prompt{turn_id, text}), whose
// receiver refuses messages over gRPC's default 4 MiB; the 64 KiB left over
// hold the turn id and the message's framing. A longer prompt would kill the
// plugin's stream and be reported as the plugin's failure, so the host
// refuses it first: --prompt, --prompt-file, a spawn's prompt or
// prompt_file, a loop or team phase's prompt, and the control methods
// prompt and interrupt_and_prompt.
const MaxPromptBytes = 4<<20 - 64<<10

// Errors of CheckPrompt; both are the user's fault.
var (
	// ErrPromptNotUTF8: the prompt holds bytes that are not UTF-8; the wire
	// carries text only.
	ErrPromptNotUTF8 = errors.New("prompt is not valid UTF-8")
	// ErrPromptTooLarge: the prompt is longer than MaxPromptBytes.
	ErrPromptTooLarge = errors.New("prompt is too large")
)

// PromptError is CheckPrompt's refusal; it matches ErrPromptNotUTF8 or
// ErrPromptTooLarge.
type PromptError struct {
	What string // the prompt's source, as the user named it: "--prompt", "prompt_file \"x.md\""
	kind error
	msg  string
}

func (e *PromptError) Error() string { return e.What + " " + e.msg }
func (e *PromptError) Unwrap() error { return e.kind }

// CheckPrompt refuses a prompt that cannot reach a plugin: bytes that are
// not UTF-8 (the first offending offset is named) or more than
// MaxPromptBytes. what names the prompt's source in the message.
func CheckPrompt(what, text string) error {
	if len(text) > MaxPromptBytes {
		return TooLargePrompt(what, int64(len(text)))
	}
	if !utf8.ValidString(text) {
		at := 0
		for at < len(text) {
			r, n := utf8.DecodeRuneInString(text[at:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			at += n
		}
		return &PromptError{What: what, kind: ErrPromptNotUTF8,
			msg: fmt.Sprintf("is not valid UTF-8 (byte 0x%02x at offset %d); prompts are sent as text: convert it to UTF-8 (e.g. iconv -t UTF-8)", text[at], at)}
	}
	return nil
}

// TooLargePrompt is the refusal of a prompt of size bytes, for a caller
// that knows the size before reading it all (a prompt file).
func TooLargePrompt(what string, size int64) error {
	return &PromptError{What: what, kind: ErrPromptTooLarge,
		msg: fmt.Sprintf("is %d bytes; a prompt is at most %d bytes (MaxPromptBytes): shorten it, or put the material in a file the agent reads", size, MaxPromptBytes)}
}

// ErrDirNotUTF8: a working directory whose path is not UTF-8; Open carries
// it to the plugin as text.
var ErrDirNotUTF8 = errors.New("directory path is not valid UTF-8")

// CheckDir refuses a working directory the wire cannot carry: a path that
// is not UTF-8. The message starts with the quoted path, for the caller to
// prefix with its name ("--dir", "dir"); it matches ErrDirNotUTF8.
func CheckDir(path string) error {
	if utf8.ValidString(path) {
		return nil
	}
	return dirError(path)
}

type dirError string

func (e dirError) Error() string {
	return fmt.Sprintf("%q is not valid UTF-8; the directory is sent to the plugin as text: use a UTF-8 path (e.g. a symlink to it)", string(e))
}

func (e dirError) Unwrap() error { return ErrDirNotUTF8 }
