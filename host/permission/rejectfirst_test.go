package permission

import (
	"context"
	"testing"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

func TestRejectFirst(t *testing.T) {
	allow := sdk.PermissionOption{ID: "a", Kind: "allow_once"}
	reject := sdk.PermissionOption{ID: "r", Kind: "Reject_Always"}
	other := sdk.PermissionOption{ID: "o", Kind: "custom"}
	for _, c := range []struct {
		name    string
		options []sdk.PermissionOption
		want    sdk.PermissionDecision
		events  int
	}{
		{"a reject option", []sdk.PermissionOption{allow, reject}, sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: "r", Kind: sdk.DecisionKind("Reject_Always")}, 2},
		{"no reject option: the first", []sdk.PermissionOption{other, allow}, sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: "o", Kind: sdk.DecisionKind("custom")}, 2},
		{"no options: cancelled", nil, sdk.PermissionDecision{Outcome: sdk.OutcomeCancelled}, 1},
	} {
		var evs []event.Event
		wait := RejectFirst{}.Record(context.Background(), sdk.PermissionRequest{ID: "p1", Options: c.options}, func(e event.Event) { evs = append(evs, e) })
		got, err := wait(context.Background())
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
		if len(evs) != c.events || evs[0]["event"] != string(sdk.EventPermissionRequest) || (c.events == 2 && evs[1]["event"] != string(sdk.EventPermissionResponse)) {
			t.Errorf("%s: events %v", c.name, evs)
		}
	}
}
