package liveview

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestChoicesOf(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []option
		want string
	}{
		{"opencode", []option{{"once", "allow_once", "Allow once"}, {"always", "allow_always", "Always allow"}, {"reject", "reject_once", "Reject"}},
			"  Allow once / Always allow / Reject [o/a/r] "},
		{"no names: the kind in words", []option{{"allow", "allow_once", ""}, {"deny", "reject", ""}},
			"  Allow once / Reject [o/r] "},
		{"unknown kinds and a repeated kind take their position", []option{{"x", "weird", ""}, {"y", "allow_once", "Yes"}, {"z", "allow_once", "Also yes"}},
			"  x / Yes / Also yes [1/o/3] "},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := question(choicesOf(c.opts)); got != c.want {
				t.Errorf("question = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPick(t *testing.T) {
	cs := choicesOf([]option{{"once", "allow_once", "Allow once"}, {"reject", "reject_once", "Reject"}})
	for line, want := range map[string]string{"o": "once", " R \n": "reject", "once": "once", "allow once": "once", "": "", "y": "", "oo": ""} {
		c, ok := pick(cs, line)
		if ok != (want != "") || c.id != want {
			t.Errorf("pick(%q) = %q, %v; want %q", line, c.id, ok, want)
		}
	}
}

// TestViewAsksInline: a request nothing answers is asked on the terminal;
// a line that names no option asks again; the answer is the option id.
func TestViewAsksInline(t *testing.T) {
	w := event.NewWriter(nil, event.Stamp{RunID: "r"}, event.Options{})
	defer w.Close()
	var out syncBuffer
	v := Start(w, Options{Out: &out, Mode: TTY})
	v.AnswerInline()
	opts := []sdk.PermissionOption{{ID: "once", Kind: "allow_once", Name: "Allow once"}, {ID: "always", Kind: "allow_always", Name: "Always allow"}, {ID: "reject", Kind: "reject_once", Name: "Reject"}}
	if _, err := w.Write(event.Event{"event": "permission.request", "request_id": "7", "question": "Run rm?", "resolver": "none",
		"options": []any{map[string]any{"optionId": "once", "kind": "allow_once", "name": "Allow once"}, map[string]any{"optionId": "always", "kind": "allow_always", "name": "Always allow"}, map[string]any{"optionId": "reject", "kind": "reject_once", "name": "Reject"}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "[o/a/r] "); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no question:\n%q", out.String())
		}
	}
	lines := make(chan string, 2)
	got := make(chan string, 1)
	go func() {
		id, _ := v.Ask(context.Background(), sdk.PermissionRequest{ID: "7", Options: opts}, lines)
		got <- id
	}()
	lines <- "maybe"
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "answer o, a, r"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a wrong line did not ask again:\n%q", out.String())
		}
	}
	lines <- "a"
	if id := <-got; id != "always" {
		t.Errorf("answer %q, want always", id)
	}
	v.Finish(Summary{StopReason: "end_turn"})
	screen := out.String()
	if !strings.Contains(screen, "options: once: Allow once, always: Always allow, reject: Reject\n  Allow once / Always allow / Reject [o/a/r] ") {
		t.Errorf("screen:\n%q", screen)
	}
	if strings.Count(screen, "Always allow") != 3 { // the options line and the question twice
		t.Errorf("the options are not printed once plus the questions:\n%q", screen)
	}

	// Stdin closed: Ask gives up; a done ctx withdraws the question.
	closed := make(chan string)
	close(closed)
	if _, err := v.Ask(context.Background(), sdk.PermissionRequest{ID: "8", Options: opts}, closed); !errors.Is(err, io.EOF) {
		t.Errorf("closed stdin: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Ask(ctx, sdk.PermissionRequest{ID: "9", Options: opts}, make(chan string)); !errors.Is(err, context.Canceled) {
		t.Errorf("done ctx: %v", err)
	}
}
