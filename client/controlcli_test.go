package client

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

func controlCommand(t *testing.T, name string) ControlCommand {
	t.Helper()
	for _, c := range ControlCommands {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no control command %s", name)
	return ControlCommand{}
}

func TestControlCommandParams(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want map[string]any
		err  string
	}{
		{name: "status", want: map[string]any{}},
		{name: "status", args: []string{"rt_1"}, want: map[string]any{"runtime_id": "rt_1"}},
		{name: "list"},
		{name: "prompt", args: []string{"go on"}, want: map[string]any{"text": "go on"}},
		{name: "prompt", args: []string{"go on", "rt_2"}, want: map[string]any{"text": "go on", "runtime_id": "rt_2"}},
		{name: "interrupt-and-prompt", args: []string{"stop"}, want: map[string]any{"text": "stop", "keep_queue": false}},
		{name: "answer-permission", args: []string{"req", "allow", "rt_3"}, want: map[string]any{"request_id": "req", "option_id": "allow", "runtime_id": "rt_3"}},
		{name: "shutdown", want: map[string]any{"mode": "graceful"}},
		{name: "shutdown", args: []string{"kill"}, want: map[string]any{"mode": "kill"}},
		{name: "shutdown", args: []string{"soon"}, err: `shutdown: unknown mode "soon" (graceful, kill or immediate)`},
	} {
		got, err := controlCommand(t, tc.name).Params(tc.args)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s %v: error %v, want %q", tc.name, tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %v = %v, %v; want %v", tc.name, tc.args, got, err, tc.want)
		}
	}
}

func TestControlCommandCheckArgs(t *testing.T) {
	c := controlCommand(t, "answer-permission")
	for n, ok := range map[int]bool{0: false, 1: false, 2: true, 3: true, 4: false} {
		err := c.CheckArgs(make([]string, n))
		if (err == nil) != ok {
			t.Errorf("%d arguments: %v", n, err)
		}
		if err != nil && err.Error() != "answer-permission: usage: avenor control --socket <path> answer-permission <request-id> <option-id> [runtime-id]" {
			t.Errorf("%d arguments: %q", n, err)
		}
	}
}

func TestWriteIndented(t *testing.T) {
	var b bytes.Buffer
	if err := WriteIndented(&b, []byte(`{"a":1}`)); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("WriteIndented = %q, %v", b.String(), err)
	}
	if err := WriteIndented(&b, []byte(`{"a"`)); err == nil || !strings.HasPrefix(err.Error(), "the server's answer is not JSON") {
		t.Errorf("WriteIndented of a cut answer: %v", err)
	}
}

func TestAwaitCommandCheck(t *testing.T) {
	ok := AwaitCommand{Until: "attention", Format: "plain"}
	for _, tc := range []struct {
		c    AwaitCommand
		want string
	}{
		{ok, ""},
		{AwaitCommand{Until: "done", Format: "json", Timeout: time.Second}, ""},
		{AwaitCommand{Until: "later", Format: "plain"}, `--until "later": attention or done`},
		{AwaitCommand{Until: "done", Format: "xml"}, `--format "xml": plain or json`},
		{AwaitCommand{Until: "done", Format: "json", Timeout: -time.Second}, "--timeout must not be negative"},
	} {
		got := ""
		if err := tc.c.Check(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestDefaultServerSocket(t *testing.T) {
	if _, err := DefaultServerSocket(""); err == nil || !strings.Contains(err.Error(), "pass --control-socket") {
		t.Errorf("no home: %v", err)
	}
	home := t.TempDir()
	p, err := DefaultServerSocket(home)
	if err != nil || p != DefaultSocketPath(home) {
		t.Fatalf("DefaultServerSocket = %q, %v", p, err)
	}
}
