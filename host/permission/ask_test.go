package permission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// TestAskAnswersLast: the person at the terminal answers a request nothing
// else is set up to answer; the response says source "tty".
func TestAskAnswersLast(t *testing.T) {
	b := permission.New(permission.Options{Ask: func(_ context.Context, req sdk.PermissionRequest) (permission.Answer, error) {
		return permission.Answer{Outcome: sdk.OutcomeSelected, OptionID: "proceed_once"}, nil
	}})
	var rec recorder
	d, err := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "1", Options: geminiOptions}, rec.emit)(context.Background())
	if err != nil || d.OptionID != "proceed_once" {
		t.Fatalf("decision %+v, %v", d, err)
	}
	if req := rec.first("permission.request"); req["resolver"] != "none" {
		t.Errorf("permission.request = %v, want resolver none", req)
	}
	if resp := rec.first("permission.response"); resp["source"] != "tty" || resp["kind"] != "allow" {
		t.Errorf("permission.response = %v, want source tty", resp)
	}
}

// TestAskComesAfterEveryOtherResolver: auto-approve, --on-permission deny
// and a control answer all decide before the terminal; the terminal's
// question is withdrawn (its ctx ends) when a control answer decides.
func TestAskComesAfterEveryOtherResolver(t *testing.T) {
	never := func(ctx context.Context, _ sdk.PermissionRequest) (permission.Answer, error) {
		<-ctx.Done()
		return permission.Answer{}, ctx.Err()
	}
	for _, o := range []permission.Options{{AutoApprove: true, Ask: never}, {Unanswered: permission.UnansweredDeny, Ask: never}} {
		var rec recorder
		if _, err := permission.New(o).Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "1", Options: geminiOptions}, rec.emit)(context.Background()); err != nil {
			t.Fatal(err)
		}
		if resp := rec.first("permission.response"); resp["source"] != "avenor" {
			t.Errorf("%+v: permission.response = %v, want source avenor", o, resp)
		}
	}

	withdrawn := make(chan struct{})
	b := permission.New(permission.Options{Ask: func(ctx context.Context, _ sdk.PermissionRequest) (permission.Answer, error) {
		<-ctx.Done()
		close(withdrawn)
		return permission.Answer{}, ctx.Err()
	}})
	var rec recorder
	wait := b.Session("s").Record(context.Background(), sdk.PermissionRequest{ID: "1", Options: geminiOptions}, rec.emit)
	done := make(chan sdk.PermissionDecision, 1)
	go func() { d, _ := wait(context.Background()); done <- d }()
	if err := b.Answer("1", permission.Answer{Outcome: sdk.OutcomeSelected, OptionID: "cancel"}); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d.OptionID != "cancel" {
		t.Errorf("decision %+v", d)
	}
	select {
	case <-withdrawn:
	case <-time.After(5 * time.Second):
		t.Fatal("the terminal's question was not withdrawn")
	}
	if resp := rec.first("permission.response"); resp["source"] != "control" {
		t.Errorf("permission.response = %v, want source control", resp)
	}
}

// TestAskGivesUp: a terminal that cannot answer (stdin closed) leaves the
// request waiting as without it; an answer the request does not offer is
// refused and the request still waits.
func TestAskGivesUp(t *testing.T) {
	for _, ask := range []func(context.Context, sdk.PermissionRequest) (permission.Answer, error){
		func(context.Context, sdk.PermissionRequest) (permission.Answer, error) {
			return permission.Answer{}, errors.New("eof")
		},
		func(context.Context, sdk.PermissionRequest) (permission.Answer, error) {
			return permission.Answer{Outcome: sdk.OutcomeSelected, OptionID: "nope"}, nil
		},
	} {
		b := permission.New(permission.Options{Ask: ask})
		var rec recorder
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		d, err := b.Session("s").Record(ctx, sdk.PermissionRequest{ID: "1", Options: geminiOptions}, rec.emit)(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || d.Outcome != sdk.OutcomeCancelled {
			t.Errorf("decision %+v, %v; want it to wait until the turn ends", d, err)
		}
		if resp := rec.first("permission.response"); resp != nil {
			t.Errorf("permission.response = %v, want none", resp)
		}
	}
}
