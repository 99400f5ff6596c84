package control

import (
	"testing"
)

// sourcedAnswerer is a fakeAnswerer that also takes the source hint.
type sourcedAnswerer struct {
	fakeAnswerer
	sources []string
}

func (f *sourcedAnswerer) AnswerAs(source, req, opt, msg string) error {
	f.sources = append(f.sources, source)
	return f.Answer(req, opt, msg)
}

// answer_permission's optional source reaches the answerer; an unknown one
// is -32602 naming the allowed hints, and nothing is answered.
func TestAnswerPermissionSourceHint(t *testing.T) {
	cases := []struct {
		name, params, want string
		sources            []string
	}{
		{"board", `"source":"board"`, `{"jsonrpc":"2.0","id":1,"result":{"accepted":true}}`, []string{"board"}},
		{"no hint", `"message":""`, `{"jsonrpc":"2.0","id":1,"result":{"accepted":true}}`, nil},
		{"unknown", `"source":"file"`,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"invalid params","data":{"detail":"source \"file\" is not one of control, board; omit it (control) or name the front door"}}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := &sourcedAnswerer{fakeAnswerer: fakeAnswerer{pending: true}}
			s := startRun(t, newFakeRuntime(), runOptions{Permissions: ans}, Config{})
			got := dialRaw(t, s.Path()).call(`{"jsonrpc":"2.0","id":1,"method":"answer_permission","params":{"request_id":"p1","option_id":"allow",` + tc.params + `}}`)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(ans.sources) != len(tc.sources) || (len(tc.sources) > 0 && ans.sources[0] != tc.sources[0]) {
				t.Errorf("AnswerAs sources = %q; want %q", ans.sources, tc.sources)
			}
		})
	}
}
