package permission_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var fastFile = permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: 10 * time.Second}

// goldenRequest is an ACP-like request with raw backend fields.
func goldenRequest() (sdk.PermissionRequest, permission.FileRequest) {
	req := sdk.PermissionRequest{
		ID: "17", Tool: "bash", Question: "Run command?",
		Options: []sdk.PermissionOption{
			{ID: "allow", Kind: "allow_once", Name: "Allow once"},
			{ID: "deny", Kind: "reject"},
			{ID: "explain", Kind: "reject_once", RequiresMessage: true},
		},
		Fields: map[string]any{
			"toolCall": map[string]any{"toolCallId": "call_1", "title": "go test ./... && rm -rf <tmp>", "kind": "execute"},
		},
	}
	ev := permission.RequestEvent(req, permission.ResolverFile)
	return req, permission.NewFileRequest(req, "ses_123", ev)
}

func TestRequestGolden(t *testing.T) {
	_, fr := goldenRequest()
	got, err := fr.Encode()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "request.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf(".req bytes differ from %s:\n%s", golden, got)
	}

	// The handler writes exactly these bytes, mode 0600, and leaves no temp file.
	base := filepath.Join(t.TempDir(), "run.perm")
	h := permission.NewFileHandler(base, fastFile)
	res := askAsync(context.Background(), h, fr)
	waitFile(t, h.ReqPath())
	written, err := os.ReadFile(h.ReqPath())
	if err != nil || !bytes.Equal(written, want) {
		t.Fatalf("written .req = %q, %v", written, err)
	}
	if st, _ := os.Stat(h.ReqPath()); st.Mode().Perm() != 0o600 {
		t.Errorf(".req mode = %v, want 0600", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(base + ".req.tmp*"); len(left) != 0 {
		t.Errorf(".req.tmp left behind: %v", left)
	}
	writeResponse(t, h.ResponsePath(), `{"option_id":"allow"}`)
	if r := <-res; r.err != nil || r.a.OptionID != "allow" {
		t.Fatalf("Ask = %+v", r)
	}
	if _, err := os.Stat(h.ReqPath()); err != nil {
		t.Errorf("the .req of an answered request is kept: %v", err)
	}
}

func TestFileRequestShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  sdk.PermissionRequest
		sess string
		want string
	}{
		{name: "only request_id is always written", req: sdk.PermissionRequest{ID: "1"},
			want: "{\n  \"request_id\": \"1\"\n}\n"},
		{name: "question falls back to the event's message",
			req:  sdk.PermissionRequest{ID: "2", Fields: map[string]any{"message": "May I?"}},
			sess: "s", want: "{\n  \"request_id\": \"2\",\n  \"session_id\": \"s\",\n  \"question\": \"May I?\",\n  \"payload\": {\n    \"message\": \"May I?\"\n  }\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{}
			for k, v := range tc.req.Fields {
				ev[k] = v
			}
			got, err := permission.NewFileRequest(tc.req, tc.sess, ev).Encode()
			if err != nil || string(got) != tc.want {
				t.Fatalf("Encode = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestFileHandler(t *testing.T) {
	_, fr := goldenRequest()
	for _, tc := range []struct {
		name string
		opts permission.FileOptions
		// act plays the harness once the .req exists; cancel ends ctx.
		act     func(t *testing.T, h *permission.FileHandler, cancel func())
		want    permission.Answer
		wantErr error  // ErrInvalid kinds, ErrFileTimeout or context.Canceled
		msg     string // exact error text, %s = response path
	}{
		{name: "selected with a message", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"outcome":"selected","option_id":"explain","message":"use the mock"}`)
		}, want: permission.Answer{Outcome: "selected", OptionID: "explain", Message: "use the mock"}},
		{name: "cancelled", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"outcome":"cancelled","option_id":"allow"}`)
		}, want: permission.Answer{Outcome: "cancelled", OptionID: "allow"}},
		{name: "an empty file is not written yet", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), "")
			time.Sleep(30 * time.Millisecond)
			writeResponse(t, h.ResponsePath(), `{"option_id":"deny"}`)
		}, want: permission.Answer{Outcome: "selected", OptionID: "deny"}},
		{name: "a half-written file is not written yet", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"option_id":`)
			time.Sleep(30 * time.Millisecond)
			writeResponse(t, h.ResponsePath(), `{"option_id":"deny"}`)
		}, want: permission.Answer{Outcome: "selected", OptionID: "deny"}},
		{name: "unknown option", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"option_id":"yes"}`)
		}, wantErr: permission.ErrUnknownOption,
			msg: `permission handler: response %s: option "yes" is not in the offered set; valid options: allow, deny, explain`},
		{name: "bad outcome", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"outcome":"later","option_id":"allow"}`)
		}, wantErr: permission.ErrBadOutcome},
		{name: "missing required message", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"option_id":"explain"}`)
		}, wantErr: permission.ErrMessageRequired},
		{name: "message not UTF-8", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), "{\"option_id\":\"allow\",\"message\":\"\xfe\"}")
		}, wantErr: permission.ErrMessageNotUTF8},
		{name: "response too big", act: func(t *testing.T, h *permission.FileHandler, _ func()) {
			writeResponse(t, h.ResponsePath(), `{"option_id":"allow","message":"`+string(bytes.Repeat([]byte("x"), 1<<20))+`"}`)
		}, wantErr: permission.ErrResponseTooBig},
		{name: "timeout", opts: permission.FileOptions{PollInterval: 5 * time.Millisecond, Timeout: 60 * time.Millisecond},
			act:     func(*testing.T, *permission.FileHandler, func()) {},
			wantErr: permission.ErrFileTimeout, msg: "permission handler: no answer to request 17 in %s within 60ms"},
		{name: "ctx done", act: func(_ *testing.T, _ *permission.FileHandler, cancel func()) { cancel() },
			wantErr: context.Canceled, msg: "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := fastFile
			if tc.opts.Timeout != 0 {
				opts = tc.opts
			}
			base := filepath.Join(t.TempDir(), "run.perm")
			h := permission.NewFileHandler(base, opts)
			// A stale answer from an earlier request must never be taken.
			writeResponse(t, h.ResponsePath(), `{"option_id":"allow"}`)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := askAsync(ctx, h, fr)
			waitFile(t, h.ReqPath())
			if _, err := os.Stat(h.ResponsePath()); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("stale response not removed before the .req was written: %v", err)
			}
			tc.act(t, h, cancel)
			r := <-res
			if tc.wantErr == nil {
				if r.err != nil || r.a != tc.want {
					t.Fatalf("Ask = %+v, %v; want %+v", r.a, r.err, tc.want)
				}
				return
			}
			if !errors.Is(r.err, tc.wantErr) {
				t.Fatalf("Ask error = %v, want %v", r.err, tc.wantErr)
			}
			if tc.msg != "" {
				want := tc.msg
				if bytes.Contains([]byte(want), []byte("%s")) {
					want = sprintf(want, h.ResponsePath())
				}
				if r.err.Error() != want {
					t.Errorf("message = %q, want %q", r.err.Error(), want)
				}
			}
			if _, err := os.Stat(h.ReqPath()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf(".req still on disk after an error: %v", err)
			}
		})
	}
}

func TestFileHandlerCannotWrite(t *testing.T) {
	base := filepath.Join(t.TempDir(), "missing-dir", "run.perm")
	_, fr := goldenRequest()
	_, err := permission.NewFileHandler(base, fastFile).Ask(context.Background(), fr)
	if err == nil || !bytes.HasPrefix([]byte(err.Error()), []byte("permission handler: write request")) {
		t.Fatalf("Ask = %v, want a write error", err)
	}
}

type askResult struct {
	a   permission.Answer
	err error
}

func askAsync(ctx context.Context, h *permission.FileHandler, fr permission.FileRequest) <-chan askResult {
	res := make(chan askResult, 1)
	go func() {
		a, err := h.Ask(ctx, fr)
		res <- askResult{a, err}
	}()
	return res
}

// waitFile waits for path to exist.
func waitFile(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(time.Millisecond)
	}
}

// writeResponse writes a response atomically, as a harness should.
func writeResponse(t testing.TB, path, data string) {
	t.Helper()
	tmp := path + ".test-tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
