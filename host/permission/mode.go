package permission

import (
	"strings"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// SourceMode is permission.response's source when the run's permission
// mode decided (docs/permission-handler.md#permission-modes): before
// auto-approve, the control plane and the file handler, so that a runtime
// that asks anyway can never widen its mode.
const SourceMode = "mode"

// Action is what a permission request asks to do, as far as a mode cares.
type Action string

// Actions of Classify.
const (
	ActionRead    Action = "read"    // reads, searches, fetches: every mode lets them through
	ActionEdit    Action = "edit"    // writes, deletes or moves files
	ActionCommand Action = "command" // runs a shell command
	ActionOther   Action = "other"   // anything else (an MCP tool, an unknown tool)
)

// Tool names, lower-cased, across the runtimes' vocabularies: Claude Code,
// ACP tool kinds, Gemini CLI, Codex, OpenCode and pi.
var (
	editTools = map[string]bool{
		"edit": true, "write": true, "multiedit": true, "notebookedit": true, "delete": true, "move": true,
		"write_file": true, "replace": true, "patch": true, "apply_patch": true, "filechange": true,
	}
	commandTools = map[string]bool{
		"bash": true, "shell": true, "execute": true, "exec": true, "run_shell_command": true,
		"command": true, "terminal": true, "commandexecution": true,
	}
	readTools = map[string]bool{
		"read": true, "glob": true, "grep": true, "ls": true, "search": true, "fetch": true, "think": true,
		"webfetch": true, "websearch": true, "read_file": true, "list_directory": true, "todowrite": true,
	}
)

// Classify says what req asks to do, from the ACP tool call's kind when the
// request carries one, else its tool name. A request it cannot place is
// ActionOther.
func Classify(req sdk.PermissionRequest) Action {
	if tc, ok := req.Fields["toolCall"].(map[string]any); ok {
		if kind, _ := tc["kind"].(string); kind != "" && kind != "other" {
			if a := classifyName(kind); a != ActionOther {
				return a
			}
		}
	}
	return classifyName(req.Tool)
}

func classifyName(name string) Action {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case commandTools[n]:
		return ActionCommand
	case editTools[n]:
		return ActionEdit
	case readTools[n]:
		return ActionRead
	}
	return ActionOther
}

// modeDecision is what mode decides of a request: allow or reject at once
// (decided), or leave it to the rest of the precedence. In plan an edit, a
// command and anything it cannot place are rejected — a read-only mode
// fails closed; accept-edits allows edits; full-access allows edits and
// commands. A request that requires user input (a question) is never the
// mode's to answer.
func modeDecision(mode sdk.PermissionMode, req sdk.PermissionRequest) (allow, decided bool) {
	if mode == "" || req.RequiresUserInput {
		return false, false
	}
	a := Classify(req)
	switch mode {
	case sdk.ModePlan:
		return false, a != ActionRead
	case sdk.ModeAcceptEdits:
		return true, a == ActionEdit
	case sdk.ModeFullAccess:
		return true, a == ActionEdit || a == ActionCommand
	}
	return false, false
}

// byMode decides req by the broker's permission mode when the mode says
// so: one permission.request (resolver automatic) and one
// permission.response with source "mode". A mode that allows needs an
// allow option; one that rejects picks a reject option, else answers
// reject by kind (the plugin then refuses the call).
func (s *Session) byMode(req sdk.PermissionRequest, emit func(event.Event)) (sdk.PermissionDecision, bool) {
	mode := s.b.opts.Mode
	if s.mode != "" {
		mode = s.mode
	}
	allow, decided := modeDecision(mode, req)
	if !decided {
		return sdk.PermissionDecision{}, false
	}
	var d sdk.PermissionDecision
	var ev event.Event
	if allow {
		opt, ok := preferredAllow(req.Options)
		if !ok {
			return sdk.PermissionDecision{}, false // nothing to allow with: the precedence decides
		}
		d = sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, OptionID: opt.ID, Kind: sdk.DecisionKind(opt.Kind)}
		ev = ResponseEvent(req.ID, opt.ID, opt.Kind, SourceMode)
	} else {
		d = sdk.PermissionDecision{Outcome: sdk.OutcomeSelected, Kind: sdk.KindReject,
			Message: "permission mode " + string(mode) + " does not allow this"}
		optID := ""
		if opt, ok := preferredReject(req.Options); ok {
			optID, d.OptionID = opt.ID, opt.ID
		}
		ev = ResponseEvent(req.ID, optID, sdk.KindReject, SourceMode)
	}
	ev["permission_mode"] = string(mode)
	emit(RequestEvent(req, ResolverAutomatic))
	emit(ev)
	return d, true
}
