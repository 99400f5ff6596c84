package scripted

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/sdk/runtime"
)

func TestParse(t *testing.T) {
	half := 0.5
	cases := []struct {
		name   string
		script string
		want   []Step
	}{
		{"empty", "", nil},
		{"blank lines and comments", "\n  \n# say no\n\t# nor this\n", nil},
		{"say as written", "say hello   world ", []Step{{Line: 1, Cmd: "say", Text: "hello   world"}}},
		{"say quoted", `say "[loop: exit]\n"`, []Step{{Line: 1, Cmd: "say", Text: "[loop: exit]\n"}}},
		{"say two literals is taken as written", `say "a" "b"`, []Step{{Line: 1, Cmd: "say", Text: `"a" "b"`}}},
		{"say nothing", "say", []Step{{Line: 1, Cmd: "say"}}},
		{"tab after the command", "think\tpondering", []Step{{Line: 1, Cmd: "think", Text: "pondering"}}},
		{"crlf", "say hi\r\nstop refusal\r\n", []Step{{Line: 1, Cmd: "say", Text: "hi"}, {Line: 2, Cmd: "stop", Text: "refusal"}}},
		{"chunks", "chunks 3", []Step{{Line: 1, Cmd: "chunks", N: 3}}},
		{"chunks with options", "chunks 2 every=15ms text=ab", []Step{{Line: 1, Cmd: "chunks", N: 2, Duration: 15 * time.Millisecond, Text: "ab"}}},
		{"chunks quoted text", `chunks 2 text="a b"`, []Step{{Line: 1, Cmd: "chunks", N: 2, Text: "a b"}}},
		{"flood", "flood 1000", []Step{{Line: 1, Cmd: "flood", N: 1000}}},
		{"sleep", "sleep 1.5s", []Step{{Line: 1, Cmd: "sleep", Duration: 1500 * time.Millisecond}}},
		{"tool", "tool run the tests kind=execute", []Step{{Line: 1, Cmd: "tool", Text: "run the tests", Kind: "execute"}}},
		{"tool default kind", "tool look", []Step{{Line: 1, Cmd: "tool", Text: "look", Kind: "other"}}},
		{"tool quoted key is a title", `tool "kind=x"`, []Step{{Line: 1, Cmd: "tool", Text: "kind=x", Kind: "other"}}},
		{"permission defaults", "permission", []Step{{Line: 1, Cmd: "permission", Options: defaultOptions}}},
		{"question", `question "Which colour?" options=red|blue multi=true and="Why?"`, []Step{{Line: 1, Cmd: "question", Prompts: []runtime.QuestionPrompt{
			{Question: "Which colour?", Options: []string{"red", "blue"}, Multi: true}, {Question: "Why?"},
		}}}},
		{"question free text", `question name it`, []Step{{Line: 1, Cmd: "question", Prompts: []runtime.QuestionPrompt{{Question: "name it"}}}}},
		{"permission full", `permission tool=bash question="Run it?" options=yes:allow_always,no:reject_once user_input=true`, []Step{{
			Line: 1, Cmd: "permission", Tool: "bash", Text: "Run it?", UserInput: true,
			Options: []runtime.PermissionOption{{ID: "yes", Kind: "allow_always"}, {ID: "no", Kind: "reject_once"}},
		}}},
		{"usage", "usage in=10 out=32", []Step{{Line: 1, Cmd: "usage", Usage: runtime.Usage{InputTokens: 10, OutputTokens: 32, TotalTokens: 42}}}},
		{"usage out only", "usage out=5", []Step{{Line: 1, Cmd: "usage", Usage: runtime.Usage{OutputTokens: 5, TotalTokens: 5}}}},
		{"usage cost and window", "usage in=1 out=2 cost=0.5 window=100", []Step{{Line: 1, Cmd: "usage", Usage: runtime.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}, CostUSD: &half, Window: 100}}},
		{"stop", "stop max_tokens", []Step{{Line: 1, Cmd: "stop", Text: "max_tokens"}}},
		{"fail", "fail the model fell over", []Step{{Line: 1, Cmd: "fail", Text: "the model fell over"}}},
		{"write", "write sub/dir/a.txt hello there", []Step{{Line: 1, Cmd: "write", Path: "sub/dir/a.txt", Text: "hello there"}}},
		{"write quoted", `write a.txt "line\n"`, []Step{{Line: 1, Cmd: "write", Path: "a.txt", Text: "line\n"}}},
		{"write empty", "write a.txt", []Step{{Line: 1, Cmd: "write", Path: "a.txt"}}},
		{"shell", "shell echo hi | tr a-z A-Z", []Step{{Line: 1, Cmd: "shell", Text: "echo hi | tr a-z A-Z"}}},
		{"toolproc defaults", "toolproc idle", []Step{{Line: 1, Cmd: "toolproc", Text: "idle", N: 1, Duration: 10 * time.Minute}}},
		{"toolproc full", "toolproc busy-io n=50 for=20s", []Step{{Line: 1, Cmd: "toolproc", Text: "busy-io", N: 50, Duration: 20 * time.Second}}},
		{"child", "child 2.5", []Step{{Line: 1, Cmd: "child", Duration: 2500 * time.Millisecond}}},
		{"bare commands", "die\nignore-cancel\nannounce", []Step{{Line: 1, Cmd: "die"}, {Line: 2, Cmd: "ignore-cancel"}, {Line: 3, Cmd: "announce"}}},
		{"line numbers skip comments", "# one\n\nsay three", []Step{{Line: 3, Cmd: "say", Text: "three"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.script)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.script, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q) =\n%+v\nwant\n%+v", tc.script, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, script, want string
	}{
		{"unknown command", "say ok\nfrobnicate now", `line 2 ("frobnicate now"): unknown command "frobnicate"`},
		{"bad quote", `say "unterminated`, ""}, // taken as written: not one literal
		{"bad escape", `say "\q"`, `line 1`},
		{"chunks without n", "chunks", "want a count"},
		{"chunks negative", "chunks -1", "not a count"},
		{"chunks too many", "chunks 99999999999", "not a count"},
		{"chunks bad every", "chunks 2 every=soon", "not a duration"},
		{"chunks twice every", "chunks 2 every=1s every=2s", "every= given twice"},
		{"flood not a number", "flood lots", "not a count"},
		{"sleep negative", "sleep -1s", "not a duration"},
		{"sleep too long", "sleep 1000h", "not a duration"},
		{"sleep two", "sleep 1s 2s", "got 2 arguments"},
		{"tool without title", "tool kind=read", "tool needs a title"},
		{"permission positional", "permission please", `unexpected argument "please"`},
		{"question without text", "question options=a|b", "needs its text"},
		{"question empty option", "question q options=a||b", "empty option"},
		{"question bad multi", "question q multi=sometimes", "not true or false"},
		{"permission bad option", "permission options=allow", "not <id>:<kind>"},
		{"permission duplicate option", "permission options=a:allow_once,a:reject", `"a" given twice`},
		{"permission bad user_input", "permission user_input=maybe", "not true or false"},
		{"usage empty", "usage", "usage takes"},
		{"usage positional", "usage 12", "usage takes"},
		{"usage bad", "usage in=x", "in=:"},
		{"usage bad cost", "usage in=1 cost=-1", "cost=:"},
		{"usage bad window", "usage in=1 window=x", "window=:"},
		{"toolproc unknown mode", "toolproc spin", "unknown toolproc mode"},
		{"toolproc no mode", "toolproc n=2", "want a mode"},
		{"toolproc too many", "toolproc idle n=257", "between 1 and 256"},
		{"toolproc none", "toolproc idle n=0", "between 1 and 256"},
		{"toolproc bad for", "toolproc idle for=ever", "not a duration"},
		{"stop without reason", "stop", "want a stop reason"},
		{"fail without message", "fail", "fail needs a message"},
		{"write absolute", "write /etc/passwd x", "relative path"},
		{"write escaping", "write ../x y", "relative path"},
		{"write nothing", "write", "relative path"},
		{"shell empty", "shell", "needs a command"},
		{"child zero", "child 0", "not a number of seconds"},
		{"child NaN", "child NaN", "not a number of seconds"},
		{"die with args", "die now", "takes no arguments"},
		{"unterminated in args", `chunks 2 text="ab`, "unterminated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.script)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Parse(%q): %v", tc.script, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q) error = %v, want it to contain %q", tc.script, err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"say hi\nthink hmm\nchunks 3 every=1ms text=x\nflood 2\nsleep 1ms",
		`tool "a b" kind=read` + "\npermission tool=t question=\"q?\" options=a:allow_once,b:reject user_input=true",
		"usage in=1 out=2\nstop refusal\nfail oops\nwrite a/b.txt \"x\\n\"\nshell true\nchild 1\ndie\nignore-cancel\nannounce",
		`say "\xff\u00e9"`, "# c\n\n\tsay\t\"", "chunks 1 text=\"\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		steps, err := Parse(script)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "script line ") {
				t.Errorf("error %q does not name a line", err)
			}
			return
		}
		for _, st := range steps {
			if st.Line < 1 || st.Cmd == "" || st.N < 0 || st.N > maxCount || st.Duration < 0 || st.Duration > maxDuration {
				t.Errorf("Parse(%q) gave an out-of-bounds step %+v", script, st)
			}
		}
	})
}
