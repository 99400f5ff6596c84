package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const answerReq = `{"request_id":"7","options":[{"optionId":"allow","kind":"allow_once"},{"optionId":"deny","kind":"reject"},{"optionId":"why","kind":"reject","requiresMessage":true}]}`

func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  string // .req content; "" writes none
		resp string // existing .req.response; "" none; "DIR" a directory
		args []string
		code int
		// stderr is the exact output, %s = the perm base; "" means none.
		stderr string
		// written is the .req.response content expected after.
		written string
	}{
		{name: "selected", req: answerReq, args: []string{"--option", "allow", "--message", "ok & <go>"}, code: 0,
			written: "{\"outcome\":\"selected\",\"option_id\":\"allow\",\"message\":\"ok & <go>\",\"request_id\":\"7\"}\n"},
		{name: "no message writes an empty one", req: answerReq, args: []string{"--option", "deny"}, code: 0,
			written: "{\"outcome\":\"selected\",\"option_id\":\"deny\",\"message\":\"\",\"request_id\":\"7\"}\n"},
		{name: "cancelled", req: answerReq, args: []string{"--option", "deny", "--outcome", "cancelled"}, code: 0,
			written: "{\"outcome\":\"cancelled\",\"option_id\":\"deny\",\"message\":\"\",\"request_id\":\"7\"}\n"},
		{name: "single-dash flags", req: answerReq, args: []string{"-option", "allow", "-message=fine"}, code: 0,
			written: "{\"outcome\":\"selected\",\"option_id\":\"allow\",\"message\":\"fine\",\"request_id\":\"7\"}\n"},
		{name: "--force overwrites", req: answerReq, resp: "old\n", args: []string{"--option", "allow", "--force"}, code: 0,
			written: "{\"outcome\":\"selected\",\"option_id\":\"allow\",\"message\":\"\",\"request_id\":\"7\"}\n"},

		{name: "missing --option", req: answerReq, args: nil, code: 2,
			stderr: "avenor answer: --option is required\n"},
		{name: "bad --outcome", req: answerReq, args: []string{"--option", "allow", "--outcome", "maybe"}, code: 2,
			stderr: "avenor answer: --outcome must be selected or cancelled, got \"maybe\"\n"},
		{name: "option not offered", req: answerReq, args: []string{"--option", "x"}, code: 2,
			stderr: "avenor answer: option \"x\" is not in the offered set; valid options: allow, deny, why\n"},
		{name: "option not offered, cancelled", req: answerReq, args: []string{"--option", "x", "--outcome", "cancelled"}, code: 2,
			stderr: "avenor answer: option \"x\" is not in the offered set; valid options: allow, deny, why\n"},
		{name: "no options offered", req: `{"request_id":"1","options":[{"kind":"allow"}]}`, args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: option \"allow\" is not in the offered set; no options were offered\n"},
		{name: "missing required message", req: answerReq, args: []string{"--option", "why"}, code: 2,
			stderr: "avenor answer: option \"why\" requires a message\n"},
		{name: "message over 64 KiB", req: answerReq, args: []string{"--option", "allow", "--message", strings.Repeat("m", 64<<10+1)}, code: 2,
			stderr: "avenor answer: message is 65537 bytes; at most 65536 are allowed\n"},
		{name: "message not UTF-8", req: answerReq, args: []string{"--option", "allow", "--message", "\xff"}, code: 2,
			stderr: "avenor answer: message is not valid UTF-8\n"},
		{name: "response exists", req: answerReq, resp: "old\n", args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: response already exists at %s.req.response; pass --force to overwrite\n", written: "old\n"},
		{name: "missing .req", args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: request file %s.req does not exist\n"},
		{name: "invalid .req", req: "{not json", args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: parse request file %s.req: invalid character 'n' looking for beginning of object key string\n"},
		{name: ".req without request_id", req: `{"options":[]}`, args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: request file %s.req has no request_id\n"},
		{name: ".req is a named pipe", req: "FIFO", args: []string{"--option", "allow"}, code: 2,
			stderr: "avenor answer: request file %s.req is a named pipe (FIFO), not a regular file; give the path of a file\n"},
		{name: "I/O error", req: answerReq, resp: "DIR", args: []string{"--option", "allow", "--force"}, code: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			base := filepath.Join(dir, "run.perm")
			if tc.req == "FIFO" {
				if err := syscall.Mkfifo(base+".req", 0o600); err != nil {
					t.Fatal(err)
				}
			} else if tc.req != "" {
				if err := os.WriteFile(base+".req", []byte(tc.req), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			switch tc.resp {
			case "":
			case "DIR":
				if err := os.MkdirAll(filepath.Join(base+".req.response", "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(base+".req.response", []byte(tc.resp), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := Main(append(append([]string{"answer"}, tc.args...), base), Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, &stderr)
			}
			if tc.stderr != "" {
				want := strings.ReplaceAll(tc.stderr, "%s", base)
				if stderr.String() != want {
					t.Errorf("stderr = %q\nwant     %q", &stderr, want)
				}
			} else if tc.code == 0 && stderr.Len() != 0 {
				t.Errorf("stderr = %q, want nothing", &stderr)
			}
			if tc.code == 1 && !strings.HasPrefix(stderr.String(), "avenor answer: write response: ") {
				t.Errorf("stderr = %q", &stderr)
			}
			if tc.written != "" {
				got, err := os.ReadFile(base + ".req.response")
				if err != nil || string(got) != tc.written {
					t.Errorf(".req.response = %q, %v; want %q", got, err, tc.written)
				}
				if st, _ := os.Stat(base + ".req.response"); tc.code == 0 && st.Mode().Perm() != 0o600 {
					t.Errorf("mode = %v, want 0600", st.Mode().Perm())
				}
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp") {
					t.Errorf("temp file left behind: %s", e.Name())
				}
			}
		})
	}
}

func TestAnswerUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "no perm base", args: []string{"answer", "--option", "allow"}, code: 2,
			stderr: "avenor answer: expected one <perm-base> argument, got 0\n"},
		{name: "two perm bases", args: []string{"answer", "--option", "allow", "a", "b"}, code: 2,
			stderr: "avenor answer: expected one <perm-base> argument, got 2\n"},
		{name: "unknown flag", args: []string{"answer", "--opt", "allow", "a"}, code: 2,
			stderr: "avenor: unknown flag: --opt; did you mean --option?\nRun 'avenor --help' for usage.\n"},
		{name: "help", args: []string{"answer", "--help"}, code: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tc.args, Env{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }})
			if code != tc.code || (tc.stderr != "" && stderr.String() != tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, &stderr, tc.code, tc.stderr)
			}
		})
	}
}
