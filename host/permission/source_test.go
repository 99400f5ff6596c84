package permission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/event"
	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// An answer's source hint names the front door in permission.response
// (the board's answers say "board"); no hint says "control"; a hint
// outside AnswerSources is refused and leaves the request pending.
func TestAnswerSourceHint(t *testing.T) {
	cases := []struct {
		name, source, want string
	}{
		{"no hint", "", "control"},
		{"board", "board", "board"},
		{"explicit control", "control", "control"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := permission.New(permission.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rec := &recorder{}
			wait := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "1", Options: testOptions}, rec.emit)
			for _, bad := range []string{"file", "avenor", "Board", "x"} {
				if err := b.Answer("1", permission.Answer{OptionID: "deny", Source: bad}); !errors.Is(err, permission.ErrInvalid) {
					t.Fatalf("Answer with source %q = %v; want ErrInvalid", bad, err)
				}
			}
			if err := b.Answer("1", permission.Answer{OptionID: "deny", Source: tc.source}); err != nil {
				t.Fatal(err)
			}
			if _, err := wait(ctx); err != nil {
				t.Fatal(err)
			}
			resp := rec.first("permission.response")
			if resp == nil || resp["source"] != tc.want || resp["option_id"] != "deny" {
				t.Fatalf("permission.response = %v; want source %q", resp, tc.want)
			}
		})
	}
}

// TestAnswerReturnsOnceDecided: an accepted answer returns once its
// permission.response is written, so that a caller reading status or the
// log next never finds the request still pending. The emit is slow on
// purpose: before the fix Answer returned while it was still writing.
func TestAnswerReturnsOnceDecided(t *testing.T) {
	b := permission.New(permission.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	slow := func(ev event.Event) {
		if ev.Type() == "permission.response" {
			time.Sleep(100 * time.Millisecond)
		}
		rec.emit(ev)
	}
	wait := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "1", Options: testOptions}, slow)
	done := make(chan error, 1)
	go func() { _, err := wait(ctx); done <- err }()
	if err := b.Answer("1", permission.Answer{OptionID: "deny"}); err != nil {
		t.Fatal(err)
	}
	if rec.first("permission.response") == nil {
		t.Fatal("Answer returned before the permission.response was written")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
