package permission_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

var testOptions = []sdk.PermissionOption{
	{ID: "allow", Kind: "allow_once"},
	{ID: "always", Kind: "allow_always", Name: "Always"},
	{ID: "deny", Kind: "reject"},
	{ID: "explain", Kind: "reject_once", RequiresMessage: true},
	{ID: "weird", Kind: "ask_later"},
}

func TestParseResponse(t *testing.T) {
	big := strings.Repeat("a", permission.MaxMessageBytes)
	for _, tc := range []struct {
		name    string
		data    string
		want    permission.Answer
		wantErr error  // nil: valid
		msg     string // the error's exact text, when set
	}{
		{name: "selected", data: `{"outcome":"selected","option_id":"allow","message":"ok"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "allow", Message: "ok"}},
		{name: "outcome defaults to selected", data: `{"option_id":"deny"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "deny"}},
		{name: "empty outcome is selected", data: "{\"outcome\":\"\",\"option_id\":\"always\"}\n",
			want: permission.Answer{Outcome: "selected", OptionID: "always"}},
		{name: "null message", data: `{"option_id":"allow","message":null}`,
			want: permission.Answer{Outcome: "selected", OptionID: "allow"}},
		{name: "unknown fields are ignored", data: `{"option_id":"allow","by":"ci"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "allow"}},
		{name: "cancelled needs no option", data: `{"outcome":"cancelled"}`,
			want: permission.Answer{Outcome: "cancelled"}},
		{name: "cancelled with any option", data: `{"outcome":"cancelled","option_id":"nope"}`,
			want: permission.Answer{Outcome: "cancelled", OptionID: "nope"}},
		{name: "required message given", data: `{"option_id":"explain","message":"no network"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "explain", Message: "no network"}},
		{name: "message of exactly 64 KiB", data: `{"option_id":"allow","message":"` + big + `"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "allow", Message: big}},
		{name: "escaped surrogate pair", data: `{"option_id":"allow","message":"\ud83d\ude00"}`,
			want: permission.Answer{Outcome: "selected", OptionID: "allow", Message: "😀"}},

		{name: "unknown option", data: `{"option_id":"maybe"}`, wantErr: permission.ErrUnknownOption,
			msg: `option "maybe" is not in the offered set; valid options: allow, always, deny, explain, weird`},
		{name: "missing option", data: `{"outcome":"selected"}`, wantErr: permission.ErrUnknownOption},
		{name: "option of unknown kind", data: `{"option_id":"weird"}`, wantErr: permission.ErrBadKind,
			msg: `option "weird" has kind "ask_later", which is neither allow nor reject`},
		{name: "bad outcome", data: `{"outcome":"approved","option_id":"allow"}`, wantErr: permission.ErrBadOutcome,
			msg: `outcome "approved" is neither selected nor cancelled`},
		{name: "outcome is case-sensitive", data: `{"outcome":"Selected","option_id":"allow"}`, wantErr: permission.ErrBadOutcome},
		{name: "missing required message", data: `{"option_id":"explain"}`, wantErr: permission.ErrMessageRequired,
			msg: `option "explain" requires a message`},
		{name: "message over 64 KiB", data: `{"option_id":"allow","message":"` + big + `b"}`, wantErr: permission.ErrMessageTooLong,
			msg: "message is 65537 bytes; at most 65536 are allowed"},
		{name: "message not UTF-8", data: "{\"option_id\":\"allow\",\"message\":\"a\xffb\"}", wantErr: permission.ErrMessageNotUTF8},
		{name: "message with a lone surrogate", data: `{"option_id":"allow","message":"a\ud800b"}`, wantErr: permission.ErrMessageNotUTF8},
		{name: "message with a lone low surrogate", data: `{"option_id":"allow","message":"\udc00"}`, wantErr: permission.ErrMessageNotUTF8},
		{name: "message not a string", data: `{"option_id":"allow","message":5}`, wantErr: permission.ErrBadResponse},
		{name: "option not a string", data: `{"option_id":1}`, wantErr: permission.ErrBadResponse},
		{name: "not an object", data: `["allow"]`, wantErr: permission.ErrBadResponse},
		{name: "bare null", data: `null`, wantErr: permission.ErrBadResponse},
		{name: "not JSON", data: `allow`, wantErr: permission.ErrBadResponse},
		{name: "two objects", data: `{"option_id":"allow"}{"option_id":"deny"}`, wantErr: permission.ErrBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := permission.ParseResponse([]byte(tc.data), testOptions)
			if tc.wantErr == nil {
				if err != nil || got != tc.want {
					t.Fatalf("ParseResponse = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) || !errors.Is(err, permission.ErrInvalid) {
				t.Fatalf("ParseResponse error = %v, want %v (and ErrInvalid)", err, tc.wantErr)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("message = %q, want %q", err.Error(), tc.msg)
			}
		})
	}
}

// An empty file, or one still being written, is not an answer yet: the
// handler keeps polling instead of failing.
func TestParseResponseNotWrittenYet(t *testing.T) {
	for _, data := range []string{"", "  \n", `{"outcome":"sel`, `{"option_id":"allow"`} {
		_, err := permission.ParseResponse([]byte(data), testOptions)
		if err == nil || errors.Is(err, permission.ErrInvalid) {
			t.Errorf("ParseResponse(%q) = %v, want the not-written-yet error", data, err)
		}
	}
}

func TestParseResponseNoOptionsOffered(t *testing.T) {
	_, err := permission.ParseResponse([]byte(`{"option_id":"allow"}`), nil)
	want := `option "allow" is not in the offered set; no options were offered`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"outcome":"selected","option_id":"allow","message":"ok"}`,
		`{"outcome":"cancelled"}`, `{"option_id":"explain","message":"\ud83d\ude00"}`,
		`{"option_id":"allow","message":"\ud800"}`, "", `{"outcome":`, `null`, `[]`, "{\"message\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := permission.ParseResponse(data, testOptions)
		if err != nil {
			if a != (permission.Answer{}) {
				t.Fatalf("an error came with an answer: %+v", a)
			}
			return
		}
		// Whatever was accepted obeys the contract.
		if !utf8.ValidString(a.Message) || len(a.Message) > permission.MaxMessageBytes {
			t.Fatalf("accepted message of %d bytes, valid UTF-8 %v", len(a.Message), utf8.ValidString(a.Message))
		}
		switch a.Outcome {
		case sdk.OutcomeCancelled:
		case sdk.OutcomeSelected:
			var opt *sdk.PermissionOption
			for i := range testOptions {
				if testOptions[i].ID == a.OptionID {
					opt = &testOptions[i]
				}
			}
			if opt == nil {
				t.Fatalf("accepted option %q that was not offered", a.OptionID)
			}
			if sdk.NormalizeKind(opt.Kind) == "unknown" {
				t.Fatalf("accepted option %q of kind %q", opt.ID, opt.Kind)
			}
			if opt.RequiresMessage && a.Message == "" {
				t.Fatalf("accepted option %q without its required message", opt.ID)
			}
		default:
			t.Fatalf("accepted outcome %q", a.Outcome)
		}
	})
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
