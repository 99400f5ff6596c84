package permission_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// geminiOptions is the option list gemini-acp sends: the session-wide allow
// first, then the one-time allow, then reject.
var geminiOptions = []sdk.PermissionOption{
	{ID: "proceed_always", Kind: "allow_always", Name: "Allow for this session"},
	{ID: "proceed_once", Kind: "allow_once", Name: "Allow once"},
	{ID: "cancel", Kind: "reject_once", Name: "Reject"},
}

func TestAutoApprovePrefersAllowOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []sdk.PermissionOption
		want string
	}{
		{"gemini lists the session-wide option first", geminiOptions, "proceed_once"},
		{"only allow_always", []sdk.PermissionOption{{ID: "a", Kind: "allow_always"}, {ID: "r", Kind: "reject"}}, "a"},
		{"plain allow", []sdk.PermissionOption{{ID: "r", Kind: "reject"}, {ID: "ok", Kind: "allow"}}, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := permission.New(permission.Options{AutoApprove: true})
			var rec recorder
			d, err := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "1", Options: c.opts}, rec.emit)(context.Background())
			if err != nil || d.OptionID != c.want {
				t.Errorf("decision %+v, %v; want option %q", d, err, c.want)
			}
			if resp := rec.first("permission.response"); resp["option_id"] != c.want || resp["source"] != "avenor" {
				t.Errorf("permission.response = %v", resp)
			}
		})
	}
}

func TestUnansweredDeny(t *testing.T) {
	b := permission.New(permission.Options{Unanswered: permission.UnansweredDeny})
	var rec recorder
	d, err := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "1", Options: append([]sdk.PermissionOption{{ID: "no_forever", Kind: "reject_always"}}, geminiOptions...)}, rec.emit)(context.Background())
	if err != nil || d.OptionID != "cancel" || d.Outcome != sdk.OutcomeSelected {
		t.Fatalf("decision %+v, %v; want the one-time reject", d, err)
	}
	if req := rec.first("permission.request"); req["resolver"] != "automatic" {
		t.Errorf("permission.request resolver = %v, want automatic", req["resolver"])
	}
	if resp := rec.first("permission.response"); resp["kind"] != "reject" || resp["source"] != "avenor" || resp["option_id"] != "cancel" {
		t.Errorf("permission.response = %v", resp)
	}
	if len(b.Pending()) != 0 {
		t.Errorf("the request stays pending after deny")
	}
}

func TestUnansweredFail(t *testing.T) {
	for _, c := range []struct {
		policy string
		opts   []sdk.PermissionOption
	}{
		{permission.UnansweredFail, geminiOptions},
		{permission.UnansweredDeny, []sdk.PermissionOption{{ID: "ok", Kind: "allow"}}}, // no reject to pick
	} {
		b := permission.New(permission.Options{Unanswered: c.policy})
		var rec recorder
		d, err := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "9", Question: "Run make?", Options: c.opts}, rec.emit)(context.Background())
		if !errors.Is(err, permission.ErrUnanswered) || d.Outcome != sdk.OutcomeCancelled {
			t.Errorf("%s: decision %+v, %v; want cancelled and ErrUnanswered", c.policy, d, err)
		}
		if err != nil && !strings.Contains(err.Error(), "Run make?") {
			t.Errorf("%s: error %q does not say what was asked", c.policy, err)
		}
		if resp := rec.first("permission.response"); resp["source"] != "avenor" || resp["outcome"] != "cancelled" {
			t.Errorf("%s: permission.response = %v", c.policy, resp)
		}
	}
}

// TestUnansweredWaitSaysSo: the default waits as the contract says, tells
// the user once, and still takes a late control answer.
func TestUnansweredWaitSaysSo(t *testing.T) {
	var told atomic.Int32
	b := permission.New(permission.Options{OnUnanswered: func(sdk.PermissionRequest) { told.Add(1) }})
	var rec recorder
	wait := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "3", Options: geminiOptions}, rec.emit)
	if req := rec.first("permission.request"); req["resolver"] != "none" {
		t.Errorf("resolver = %v, want none", req["resolver"])
	}
	go func() {
		for len(b.Pending()) == 0 || told.Load() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		_ = b.Answer("3", permission.Answer{OptionID: "proceed_once"})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := wait(ctx)
	if err != nil || d.OptionID != "proceed_once" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if n := told.Load(); n != 1 {
		t.Errorf("OnUnanswered called %d times, want 1", n)
	}
}

// TestUnansweredAfterControlFallsThrough: a request held by a control client
// that disconnects reaches "none" and gets the policy.
func TestUnansweredAfterControlFallsThrough(t *testing.T) {
	ctl := newControl(permission.ClaimReserved, true)
	b := permission.New(permission.Options{Control: ctl, Unanswered: permission.UnansweredDeny})
	var rec recorder
	wait := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "4", Options: geminiOptions}, rec.emit)
	if req := rec.first("permission.request"); req["resolver"] != "reserved" {
		t.Errorf("resolver = %v, want reserved", req["resolver"])
	}
	ctl.disconnectAll()
	d, err := wait(context.Background())
	if err != nil || d.OptionID != "cancel" {
		t.Errorf("decision %+v, %v; want the reject after the fall-through", d, err)
	}
}

func TestUnansweredNote(t *testing.T) {
	req := sdk.PermissionRequest{ID: "7", Tool: "bash", Question: "Run make?", Options: geminiOptions}
	note := permission.UnansweredNote(req, "/tmp/s.sock")
	for _, want := range []string{"permission request 7 is waiting", "Run make? (tool bash)", "proceed_once: Allow once",
		"avenor control --socket /tmp/s.sock answer-permission 7 <option>, e.g. proceed_once"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	if note := permission.UnansweredNote(req, ""); !strings.Contains(note, "--on-permission") {
		t.Errorf("note without a socket does not say how to rerun:\n%s", note)
	}
}
