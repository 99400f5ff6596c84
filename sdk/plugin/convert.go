package plugin

// The one place where protobuf types meet sdk/runtime types. Everything else
// in the sdk and the host handles only runtime types.

import (
	"encoding/json"
	"fmt"
	"sync"

	pb "github.com/avenor-go/avenor/sdk/internal/runtimepb"
	"github.com/avenor-go/avenor/sdk/jsonenc"
	"github.com/avenor-go/avenor/sdk/runtime"
)

func backendInfoToProto(b runtime.BackendInfo) *pb.BackendInfo {
	return &pb.BackendInfo{
		Name:           b.Name,
		Description:    b.Description,
		Capabilities:   capabilitiesToProto(b.Capabilities),
		ResumeScope:    b.ResumeScope,
		ThinkingLevels: b.ThinkingLevels,
		EventTypes:     eventTypesToProto(b.EventTypes),
	}
}

func backendInfoFromProto(b *pb.BackendInfo) runtime.BackendInfo {
	return runtime.BackendInfo{
		Name:           b.GetName(),
		Description:    b.GetDescription(),
		Capabilities:   capabilitiesFromProto(b.GetCapabilities()),
		ResumeScope:    b.GetResumeScope(),
		ThinkingLevels: b.GetThinkingLevels(),
		EventTypes:     eventTypesFromProto(b.GetEventTypes()),
	}
}

// The wire spells the capability matrix and event types as plain strings;
// runtime's defined types are the same strings, converted one by one.
// A nil input stays nil, as the generated getters return it.

func capabilitiesToProto(m map[runtime.Capability]runtime.Support) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for c, s := range m {
		out[string(c)] = string(s)
	}
	return out
}

func capabilitiesFromProto(m map[string]string) map[runtime.Capability]runtime.Support {
	if m == nil {
		return nil
	}
	out := make(map[runtime.Capability]runtime.Support, len(m))
	for c, s := range m {
		out[runtime.Capability(c)] = runtime.Support(s)
	}
	return out
}

func eventTypesToProto(ts []runtime.EventType) []string {
	if ts == nil {
		return nil
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

func eventTypesFromProto(ts []string) []runtime.EventType {
	if ts == nil {
		return nil
	}
	out := make([]runtime.EventType, len(ts))
	for i, t := range ts {
		out[i] = runtime.EventType(t)
	}
	return out
}

func readinessToProto(r runtime.Readiness) *pb.CheckResponse {
	return &pb.CheckResponse{Ready: r.Ready, Binary: r.Binary, Version: r.Version, Auth: r.Auth, Message: r.Message}
}

func readinessFromProto(r *pb.CheckResponse) runtime.Readiness {
	return runtime.Readiness{Ready: r.GetReady(), Binary: r.GetBinary(), Version: r.GetVersion(), Auth: r.GetAuth(), Message: r.GetMessage()}
}

func openToProto(r runtime.OpenRequest) (*pb.Open, error) {
	opts, err := marshalObject(r.Options)
	if err != nil {
		return nil, fmt.Errorf("options of backend %q: %w", r.Backend, err)
	}
	return &pb.Open{
		Backend: r.Backend, Dir: r.Dir, Model: r.Model, Agent: r.Agent, Thinking: r.Thinking,
		ResumeSessionId: r.ResumeSessionID, ServerUrl: r.ServerURL, Env: r.Env,
		OptionsJson: opts, StateDir: r.StateDir, RunId: r.RunID, DirExplicit: r.DirExplicit,
	}, nil
}

func openFromProto(o *pb.Open) (runtime.OpenRequest, error) {
	opts, err := unmarshalObject(o.GetOptionsJson())
	if err != nil {
		return runtime.OpenRequest{}, fmt.Errorf("options: %w", err)
	}
	return runtime.OpenRequest{
		Backend: o.GetBackend(), Dir: o.GetDir(), Model: o.GetModel(), Agent: o.GetAgent(),
		Thinking: o.GetThinking(), ResumeSessionID: o.GetResumeSessionId(), ServerURL: o.GetServerUrl(),
		Env: o.GetEnv(), Options: opts, StateDir: o.GetStateDir(), RunID: o.GetRunId(),
		DirExplicit: o.GetDirExplicit(),
	}, nil
}

func processToProto(p runtime.ProcessInfo) *pb.ProcessInfo {
	return &pb.ProcessInfo{Pid: int32(p.PID), Pgid: int32(p.PGID), Binary: p.Binary, Version: p.Version}
}

func processFromProto(p *pb.ProcessInfo) runtime.ProcessInfo {
	return runtime.ProcessInfo{PID: int(p.GetPid()), PGID: int(p.GetPgid()), Binary: p.GetBinary(), Version: p.GetVersion()}
}

func eventToProto(ev runtime.Event) (*pb.Event, error) {
	data, err := marshalObject(ev.Fields)
	if err != nil {
		return nil, fmt.Errorf("event %q: %w", ev.Type, err)
	}
	return &pb.Event{Type: string(ev.Type), Json: data}, nil
}

// eventFromProto decodes with d, the receiving session's decoder (the hot
// path of a flood: see objectDecoder).
func eventFromProto(e *pb.Event, d *objectDecoder) (runtime.Event, error) {
	fields, err := d.decode(e.GetJson())
	if err != nil {
		return runtime.Event{}, fmt.Errorf("event %q: not a JSON object: %w", e.GetType(), err)
	}
	if fields == nil {
		fields = map[string]any{}
	}
	return runtime.Event{Type: runtime.EventType(e.GetType()), Fields: fields}, nil
}

func permissionRequestToProto(r runtime.PermissionRequest) (*pb.PermissionRequest, error) {
	raw, err := marshalObject(r.Fields)
	if err != nil {
		return nil, fmt.Errorf("permission request %q: %w", r.ID, err)
	}
	opts := make([]*pb.PermissionOption, len(r.Options))
	for i, o := range r.Options {
		opts[i] = &pb.PermissionOption{OptionId: o.ID, Kind: o.Kind, Name: o.Name, RequiresMessage: o.RequiresMessage}
	}
	return &pb.PermissionRequest{
		RequestId: r.ID, Options: opts, Tool: r.Tool, Question: r.Question,
		RequiresUserInput: r.RequiresUserInput, Json: raw,
	}, nil
}

func permissionRequestFromProto(r *pb.PermissionRequest) (runtime.PermissionRequest, error) {
	fields, err := unmarshalObject(r.GetJson())
	if err != nil {
		return runtime.PermissionRequest{}, fmt.Errorf("permission request %q: %w", r.GetRequestId(), err)
	}
	opts := make([]runtime.PermissionOption, len(r.GetOptions()))
	for i, o := range r.GetOptions() {
		opts[i] = runtime.PermissionOption{ID: o.GetOptionId(), Kind: o.GetKind(), Name: o.GetName(), RequiresMessage: o.GetRequiresMessage()}
	}
	return runtime.PermissionRequest{
		ID: r.GetRequestId(), Options: opts, Tool: r.GetTool(), Question: r.GetQuestion(),
		RequiresUserInput: r.GetRequiresUserInput(), Fields: fields,
	}, nil
}

func decisionToProto(id string, d runtime.PermissionDecision) *pb.PermissionDecision {
	return &pb.PermissionDecision{RequestId: id, Outcome: d.Outcome, OptionId: d.OptionID, Message: d.Message, Kind: d.Kind}
}

func decisionFromProto(d *pb.PermissionDecision) runtime.PermissionDecision {
	return runtime.PermissionDecision{Outcome: d.GetOutcome(), OptionID: d.GetOptionId(), Message: d.GetMessage(), Kind: d.GetKind()}
}

func turnEndedToProto(turnID string, res runtime.TurnResult, err error) *pb.TurnEnded {
	extra, merr := marshalObject(res.Extra)
	te := &pb.TurnEnded{
		TurnId: turnID, StopReason: string(res.StopReason), HasFinalOutput: res.HasFinalOutput,
		FinalOutput: res.FinalOutput, ExtraJson: extra, SessionId: res.SessionID,
	}
	if res.Usage != nil {
		u := res.Usage
		te.Usage = &pb.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens, CachedReadTokens: u.CachedReadTokens}
	}
	if err == nil && merr != nil {
		err = runtime.Errorf(runtime.FaultPlugin, "turn result extra fields: %v", merr)
	}
	if err != nil {
		te.Error = errorToProto(err)
		if te.StopReason == "" {
			te.StopReason = string(runtime.StopError)
		}
	}
	return te
}

func turnEndedFromProto(te *pb.TurnEnded) (runtime.TurnResult, error) {
	res := runtime.TurnResult{
		StopReason: runtime.StopReason(te.GetStopReason()), HasFinalOutput: te.GetHasFinalOutput(),
		FinalOutput: te.GetFinalOutput(), SessionID: te.GetSessionId(),
	}
	if u := te.GetUsage(); u != nil {
		res.Usage = &runtime.Usage{InputTokens: u.GetInputTokens(), OutputTokens: u.GetOutputTokens(), TotalTokens: u.GetTotalTokens(), CachedReadTokens: u.GetCachedReadTokens()}
	}
	extra, err := unmarshalObject(te.GetExtraJson())
	if err != nil {
		return res, runtime.Errorf(runtime.FaultPlugin, "turn result extra fields: %v", err)
	}
	res.Extra = extra
	return res, errorFromProto(te.GetError())
}

func errorToProto(err error) *pb.Error {
	if err == nil {
		return nil
	}
	return &pb.Error{Fault: string(runtime.FaultOf(err)), Message: err.Error(), Code: string(runtime.CodeOf(err))}
}

func errorFromProto(e *pb.Error) error {
	if e == nil {
		return nil
	}
	fault := runtime.Fault(e.GetFault())
	if fault == "" {
		fault = runtime.FaultPlugin
	}
	return &runtime.Error{Fault: fault, Message: e.GetMessage(), Code: runtime.Code(e.GetCode())}
}

// marshalObject encodes a JSON object, as json.Marshal does; nil encodes
// as nothing. It runs once per event a plugin emits, from any goroutine,
// so the encoders' scratch is pooled.
func marshalObject(m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	e := encoders.Get().(*jsonenc.Encoder)
	defer encoders.Put(e)
	return e.AppendObject(make([]byte, 0, 256), m)
}

var encoders = sync.Pool{New: func() any { return new(jsonenc.Encoder) }}

// unmarshalObject decodes a JSON object; empty input is a nil map. Numbers
// stay float64, as the contract's passthrough fields require.
func unmarshalObject(data []byte) (map[string]any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}
