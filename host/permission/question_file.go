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
	"path/filepath"
	"syscall"
	"time"

	"github.com/avenor-go/avenor/internal/regularfile"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// File names of the question file protocol, relative to the permission
// file base: the file handler writes <base>.question while a question
// waits and takes the answer from <base>.question.response.
const (
	QuestionSuffix         = ".question"
	QuestionResponseSuffix = ".question.response"
)

// FileQuestion is the content of <base>.question.
type FileQuestion struct {
	RequestID string               `json:"request_id"`
	SessionID string               `json:"session_id,omitempty"`
	Prompts   []sdk.QuestionPrompt `json:"prompts"`
}

// NewFileQuestion is the .question of req.
func NewFileQuestion(req sdk.QuestionRequest, sessionID string) FileQuestion {
	return FileQuestion{RequestID: req.ID, SessionID: sessionID, Prompts: req.Prompts}
}

// fileQuestionAnswer is the content of <base>.question.response:
// request_id (optional; when given it must name the waiting question) and
// answers, one entry per prompt (ParseQuestionAnswers).
type fileQuestionAnswer struct {
	RequestID string          `json:"request_id,omitempty"`
	Answers   json.RawMessage `json:"answers"`
}

type fileQuestionResult struct {
	values [][]string
	err    error
}

// askQuestion publishes q as <base>.question and polls
// <base>.question.response until it holds a valid answer or ctx ends; it
// has no timeout of its own (the broker's question bound ends ctx). The
// .question is removed on every path, so nothing answers a question nobody
// waits for. A response that is not to be trusted, names another question
// or does not fit is warned about once and waited past: the harness can
// write a proper one.
func (h *FileHandler) askQuestion(ctx context.Context, q FileQuestion) ([][]string, error) {
	qpath, rpath := h.base+QuestionSuffix, h.base+QuestionResponseSuffix
	defer os.Remove(qpath)
	if err := os.Remove(rpath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale question response: %w", err)
	}
	data, err := encodeIndented(q)
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(qpath, data); err != nil {
		return nil, err
	}
	tick := time.NewTicker(h.opts.PollInterval)
	defer tick.Stop()
	warned := ""
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		v, why := readQuestionResponse(rpath, q)
		switch {
		case v != nil:
			return v, nil
		case why != "" && why != warned && h.opts.Warn != nil:
			h.opts.Warn(why)
		}
		warned = why
	}
}

// readQuestionResponse reads and checks rpath for q: the answers, or why it
// was not taken ("" while nothing is written yet).
func readQuestionResponse(rpath string, q FileQuestion) ([][]string, string) {
	var lst syscall.Stat_t
	if err := syscall.Lstat(rpath, &lst); err != nil {
		return nil, ""
	}
	f, err := regularfile.Open(rpath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && lst.Mode&syscall.S_IFMT != syscall.S_IFLNK {
			return nil, ""
		}
		return nil, fmt.Sprintf("question response %s: %v; ignored, still waiting for question %s", rpath, err, q.RequestID)
	}
	defer f.Close()
	if why := untrusted(rpath, &lst, f, q.RequestID); why != "" {
		return nil, "question: " + why
	}
	data, err := io.ReadAll(io.LimitReader(f, maxQuestionResponseBytes+1))
	if err != nil {
		return nil, fmt.Sprintf("question response %s: %v", rpath, err)
	}
	if len(data) > maxQuestionResponseBytes {
		return nil, fmt.Sprintf("question response %s is larger than %d bytes; ignored, still waiting for question %s", rpath, maxQuestionResponseBytes, q.RequestID)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ""
	}
	var r fileQuestionAnswer
	if err := json.Unmarshal(data, &r); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || isSyntaxAtEnd(err, data) {
			return nil, "" // still being written
		}
		return nil, fmt.Sprintf(`question response %s is not a JSON object {"request_id", "answers"}: %v; ignored, still waiting for question %s`, rpath, err, q.RequestID)
	}
	if r.RequestID != "" && r.RequestID != q.RequestID {
		return nil, fmt.Sprintf("question response %s answers question %q, not the waiting question %q; ignored, still waiting", rpath, sdk.Truncate(r.RequestID, 80), q.RequestID)
	}
	v, err := ParseQuestionAnswers(r.Answers)
	if err == nil {
		v, err = ValidateQuestionAnswers(q.Prompts, v)
	}
	if err != nil {
		return nil, fmt.Sprintf("question response %s: %v; ignored, still waiting for question %s", rpath, err, q.RequestID)
	}
	return v, ""
}

// maxQuestionResponseBytes bounds <base>.question.response.
const maxQuestionResponseBytes = MaxQuestionPrompts*MaxAnswerValues*(MaxAnswerValueBytes/16) + 4096

func isSyntaxAtEnd(err error, data []byte) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n")))
}

func encodeIndented(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode question: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteQuestionAnswer is `avenor answer --question ID`: it checks that
// <base>.question holds question id, validates answers against its
// prompts, and writes <base>.question.response atomically (a temporary file
// linked into place, refusing to replace an existing response unless
// force). Validation errors match ErrInvalid.
func WriteQuestionAnswer(base, id string, answers [][]string, force bool) (string, error) {
	qpath, rpath := base+QuestionSuffix, base+QuestionResponseSuffix
	data, err := regularfile.ReadFile(qpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rpath, invalid(ErrNoQuestion, "no question is waiting: %s does not exist (the question was answered, expired, or was never asked with this base)", qpath)
	case err != nil:
		return rpath, fmt.Errorf("read question file: %w", err)
	}
	var q FileQuestion
	if err := json.Unmarshal(data, &q); err != nil || q.RequestID == "" {
		return rpath, invalid(ErrBadRequestFile, "question file %s is not a question", qpath)
	}
	if q.RequestID != id {
		return rpath, invalid(ErrNoQuestion, "the question waiting in %s is %q, not %q", qpath, q.RequestID, id)
	}
	if answers, err = ValidateQuestionAnswers(q.Prompts, answers); err != nil {
		return rpath, err
	}
	if !force {
		if _, err := os.Lstat(rpath); err == nil {
			return rpath, existsError(rpath)
		}
	}
	body, err := json.Marshal(map[string]any{"request_id": id, "answers": answers})
	if err != nil {
		return rpath, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(rpath), filepath.Base(rpath)+".tmp*")
	if err != nil {
		return rpath, fmt.Errorf("write question response: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(body, '\n'))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return rpath, fmt.Errorf("write question response: %w", err)
	}
	if force {
		if err := os.Rename(tmp.Name(), rpath); err != nil {
			return rpath, fmt.Errorf("write question response: %w", err)
		}
		return rpath, nil
	}
	if err := os.Link(tmp.Name(), rpath); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return rpath, existsError(rpath)
		}
		return rpath, fmt.Errorf("write question response: %w", err)
	}
	return rpath, nil
}

// QuestionAnswerCommand is `avenor answer --question ID --answer V...
// <perm-base>`: each --answer answers one prompt, in order (a JSON array of
// strings for a multi choice). Exit codes as AnswerCommand's.
func QuestionAnswerCommand(args []string, id string, values []string, force bool, stderr io.Writer) int {
	fail := func(code int, format string, v ...any) int {
		fmt.Fprintf(stderr, "avenor answer: "+format+"\n", v...)
		return code
	}
	switch {
	case len(args) != 1:
		return fail(2, "expected one <perm-base> argument, got %d", len(args))
	case len(values) == 0:
		return fail(2, "--question needs --answer, once per prompt")
	}
	answers := make([][]string, len(values))
	for i, v := range values {
		if len(v) > 0 && v[0] == '[' {
			var vs []string
			if err := json.Unmarshal([]byte(v), &vs); err != nil {
				return fail(2, "--answer %q starts with [ but is not a JSON array of strings", sdk.Truncate(v, 80))
			}
			answers[i] = vs
			continue
		}
		answers[i] = []string{v}
	}
	if _, err := WriteQuestionAnswer(args[0], id, answers, force); err != nil {
		if errors.Is(err, ErrInvalid) {
			return fail(2, "%v", err)
		}
		return fail(1, "%v", err)
	}
	return 0
}
