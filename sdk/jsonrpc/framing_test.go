package jsonrpc

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/agentproc"
)

func decodeAll(t testing.TB, input string, maxLine, maxFrame int) (msgs []string, frameErrs int) {
	t.Helper()
	dec := NewDecoder(agentproc.NewLineReader(strings.NewReader(input), maxLine), maxFrame)
	for {
		m, err := dec.Next()
		var fe *FrameError
		switch {
		case errors.As(err, &fe):
			frameErrs++
			continue
		case errors.Is(err, io.EOF):
			return msgs, frameErrs
		case err != nil:
			t.Fatalf("Next: %v", err)
		}
		msgs = append(msgs, m.Method+"|"+string(m.ID)+"|"+string(m.Result))
	}
}

func TestDecoder(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"session/update","params":{}}`
	const resp = `{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`
	framed := func(body string) string { return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body }
	cases := []struct {
		name      string
		input     string
		maxLine   int
		maxFrame  int
		want      []string
		frameErrs int
	}{
		{name: "ndjson", input: note + "\n" + resp + "\n", want: []string{"session/update||", "|1|{\"ok\":true}"}},
		{name: "crlf and blank lines", input: "\r\n" + note + "\r\n\n" + resp, want: []string{"session/update||", "|1|{\"ok\":true}"}},
		{name: "request id 0 and a string id", input: `{"jsonrpc":"2.0","id":0,"method":"a"}` + "\n" + `{"jsonrpc":"2.0","id":"u-1","method":"b"}` + "\n",
			want: []string{"a|0|", `b|"u-1"|`}},
		{name: "null result stays a response", input: `{"jsonrpc":"2.0","id":2,"result":null}` + "\n", want: []string{"|2|null"}},
		{name: "content-length framed", input: framed(resp), want: []string{"|1|{\"ok\":true}"}},
		{name: "framed then framed on the same line", input: framed(resp) + framed(note) + "\n", want: []string{"|1|{\"ok\":true}", "session/update||"}},
		{name: "framed then ndjson on the same line", input: framed(note) + resp + "\n", want: []string{"session/update||", "|1|{\"ok\":true}"}},
		{name: "framed body spanning lines", input: "Content-Length: " + itoa(len(note)+1) + "\r\nContent-Type: application/json\r\n\r\n" +
			strings.Replace(note, ",", ",\n", 1) + resp + "\n", want: []string{"session/update||", "|1|{\"ok\":true}"}},
		{name: "framed body with CRLF inside, a byte short", input: "Content-Length: " + itoa(len(note)+2) + "\r\n\r\n" +
			strings.Replace(note, ",", ",\r\n", 1) + "\n" + resp + "\n", want: []string{"session/update||", "|1|{\"ok\":true}"}},
		{name: "header without blank line", input: "Content-Length: " + itoa(len(resp)) + "\r\n" + resp + "\n", want: []string{"|1|{\"ok\":true}"}},
		{name: "noise is skipped", input: "starting agent...\n" + note + "\n[1,2]\n{broken\n" + resp + "\n",
			want: []string{"session/update||", "|1|{\"ok\":true}"}, frameErrs: 3},
		{name: "no method and no id", input: `{"jsonrpc":"2.0","result":1}` + "\n" + note + "\n", want: []string{"session/update||"}, frameErrs: 1},
		{name: "over-long line skipped", maxLine: 64, input: `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", 200) + "\"}\n" + note + "\n",
			want: []string{"session/update||"}, frameErrs: 1},
		{name: "over-long framed body skipped", maxFrame: 40, input: framed(note) + resp + "\n", want: []string{"|1|{\"ok\":true}"}, frameErrs: 1},
		{name: "malformed header", input: "Content-Length: lots\r\n" + resp + "\n", want: []string{"|1|{\"ok\":true}"}, frameErrs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, fe := decodeAll(t, tc.input, tc.maxLine, tc.maxFrame)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || fe != tc.frameErrs {
				t.Errorf("got %q with %d frame errors; want %q with %d", got, fe, tc.want, tc.frameErrs)
			}
		})
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// FuzzDecoder: whatever an agent writes, the decoder never panics, never
// returns a message without method and id, and keeps its buffer bounded.
func FuzzDecoder(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{}}` + "\n",
		"Content-Length: 10\r\n\r\n{\"id\":1}  \n",
		"Content-Length: 999999999\r\n\r\nx\n",
		"Content-Length: 5\r\n\r\n{\"a\":\n1}\n",
		"\r\n\r\n{}\n[]\nnull\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := NewDecoder(agentproc.NewLineReader(strings.NewReader(string(data)), 256), 256)
		for i := 0; i < 10000; i++ {
			m, err := dec.Next()
			var fe *FrameError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				return
			}
			if m.Method == "" && m.ID == nil {
				t.Fatalf("message without method and id: %+v", m)
			}
			if len(dec.framer.body) > 2*256+2 {
				t.Fatalf("framer holds %d bytes", len(dec.framer.body))
			}
		}
		t.Fatal("decoder did not end")
	})
}
