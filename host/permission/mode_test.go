package permission_test

import (
	"context"
	"testing"
	"time"

	"github.com/avenor-go/avenor/host/permission"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

var modeOptions = []sdk.PermissionOption{
	{ID: "yes", Kind: "allow_once"}, {ID: "always", Kind: "allow_always"}, {ID: "no", Kind: "reject_once"},
}

func editReq() sdk.PermissionRequest {
	return sdk.PermissionRequest{ID: "e1", Tool: "Write", Options: modeOptions}
}

func commandReq() sdk.PermissionRequest {
	return sdk.PermissionRequest{ID: "c1", Tool: "Bash", Options: modeOptions}
}

// acpReq is an ACP request: its tool call's kind says what it does.
func acpReq(kind string) sdk.PermissionRequest {
	return sdk.PermissionRequest{ID: "a1", Tool: "some_tool", Options: modeOptions,
		Fields: map[string]any{"toolCall": map[string]any{"kind": kind, "title": "t"}}}
}

// The permission mode decides before every other resolver: plan rejects an
// edit, a command and what it cannot place even under auto-approve;
// accept-edits allows edits and leaves commands to the precedence;
// full-access allows both; no mode leaves everything as it was.
func TestBrokerMode(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mode        sdk.PermissionMode
		auto        bool
		req         sdk.PermissionRequest
		wantSource  string // "" when the request waits (nobody answers)
		wantKind    string
		wantAllowed bool
	}{
		{"plan rejects an edit", sdk.ModePlan, false, editReq(), permission.SourceMode, "reject", false},
		{"plan rejects a command under auto-approve", sdk.ModePlan, true, commandReq(), permission.SourceMode, "reject", false},
		{"plan rejects an ACP edit", sdk.ModePlan, true, acpReq("edit"), permission.SourceMode, "reject", false},
		{"plan rejects an ACP execute", sdk.ModePlan, true, acpReq("execute"), permission.SourceMode, "reject", false},
		{"plan rejects what it cannot place", sdk.ModePlan, true, sdk.PermissionRequest{ID: "x", Tool: "mcp__srv__tool", Options: modeOptions}, permission.SourceMode, "reject", false},
		{"plan lets a read through to auto-approve", sdk.ModePlan, true, acpReq("read"), permission.SourceAvenor, "allow", true},
		{"accept-edits allows an edit", sdk.ModeAcceptEdits, false, editReq(), permission.SourceMode, "allow", true},
		{"accept-edits asks for a command", sdk.ModeAcceptEdits, false, commandReq(), "", "", false},
		{"accept-edits with auto-approve approves the command", sdk.ModeAcceptEdits, true, commandReq(), permission.SourceAvenor, "allow", true},
		{"full-access allows a command", sdk.ModeFullAccess, false, commandReq(), permission.SourceMode, "allow", true},
		{"full-access allows an ACP edit", sdk.ModeFullAccess, false, acpReq("edit"), permission.SourceMode, "allow", true},
		{"default asks for an edit", sdk.ModeDefault, false, editReq(), "", "", false},
		{"no mode asks for an edit", "", false, editReq(), "", "", false},
		{"no mode auto-approves a command", "", true, commandReq(), permission.SourceAvenor, "allow", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := permission.New(permission.Options{Mode: tc.mode, AutoApprove: tc.auto})
			rec := &recorder{}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			d, err := b.Session("s").Record(ctx, tc.req, rec.emit)(ctx)
			resp := rec.first(sdk.EventType("permission.response"))
			if tc.wantSource == "" {
				if resp != nil || err == nil {
					t.Fatalf("decided %+v (%v), response %v; want it to wait", d, err, resp)
				}
				return
			}
			if err != nil || resp == nil {
				t.Fatalf("decision %+v err %v response %v", d, err, resp)
			}
			if resp["source"] != tc.wantSource || resp["kind"] != tc.wantKind || d.Allowed() != tc.wantAllowed {
				t.Fatalf("response %v decision %+v; want source %q kind %q allowed %v", resp, d, tc.wantSource, tc.wantKind, tc.wantAllowed)
			}
			if tc.wantSource == permission.SourceMode && resp["permission_mode"] != string(tc.mode) {
				t.Fatalf("response %v lacks permission_mode %q", resp, tc.mode)
			}
		})
	}
}

// A question for the user is never the mode's to answer, even in plan.
func TestBrokerModeLeavesQuestions(t *testing.T) {
	b := permission.New(permission.Options{Mode: sdk.ModePlan, Unanswered: permission.UnansweredDeny})
	rec := &recorder{}
	req := commandReq()
	req.RequiresUserInput = true
	if _, err := b.Session("s").Record(context.Background(), req, rec.emit)(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp := rec.first(sdk.EventType("permission.response")); resp == nil || resp["source"] == permission.SourceMode {
		t.Fatalf("response %v; want the unanswered policy's, not the mode's", resp)
	}
}
