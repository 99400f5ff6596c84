package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/avenor-go/avenor/client"
	"github.com/avenor-go/avenor/host/control"
	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// toyRuntime stands in for one runtime of `avenor stable`, served by the
// real control method table: its status is a docs/control-protocol.md#list entry, its events a
// host event stream. Only what Await reads is filled in.
type toyRuntime struct {
	events *event.Writer
	mu     sync.Mutex
	entry  map[string]any
}

func (r *toyRuntime) ID() string            { return "rt_1" }
func (r *toyRuntime) Events() *event.Writer { return r.events }
func (r *toyRuntime) Result() any           { return map[string]any{"final_output": ""} }
func (r *toyRuntime) Cancel()               {}
func (r *toyRuntime) Prompt(context.Context, string, bool, bool) error {
	return nil
}
func (r *toyRuntime) AnswerPermission(requestID, optionID, message string) error {
	r.set(map[string]any{"pending_permission": false, "permission": nil})
	return nil
}

func (r *toyRuntime) Status() any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.entry)
}

func (r *toyRuntime) set(fields map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.Copy(r.entry, fields)
}

// toySupervisor serves the one runtime under any id.
type toySupervisor struct{ rt *toyRuntime }

func (s toySupervisor) Accept(*control.Call, string) error     { return nil }
func (s toySupervisor) Runtime(string) (control.Target, error) { return s.rt, nil }
func (s toySupervisor) serve(path string) (*control.Server, error) {
	srv := control.NewServer(control.Config{Path: path})
	control.RegisterTable(srv, s, control.TableOptions{RuntimeIDRequired: true})
	return srv, srv.Start()
}

// A harness spawns a runtime, then waits on it with Await: until the
// runtime needs attention (a pending permission request, UntilAttention),
// or until its run ends (UntilDone). Await reads the runtime's status and
// follows its events, so it returns as soon as either says so.
func ExampleClient_Await() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "avenor-example-")
	defer os.RemoveAll(dir)

	// A supervisor with one running runtime that asks a permission.
	rt := &toyRuntime{
		events: event.NewWriter(nil, event.Stamp{RunID: "run1", RuntimeID: "rt_1"}, event.Options{}),
		entry: map[string]any{
			"runtime_id": "rt_1", "status": "running", "phase": "working",
			"pending_permission": true,
			"permission":         json.RawMessage(`{"request_id":"p1","tool":"bash","question":"Run make test?"}`),
		},
	}
	srv, err := toySupervisor{rt}.serve(filepath.Join(dir, "control.sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	c, err := client.Dial(ctx, srv.Path())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// Until attention: the pending request ends the wait at once.
	out, err := c.Await(ctx, "rt_1", client.AwaitOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Attention+":", out.Summary)

	// Answer it; the runtime then finishes its turn while Await waits.
	if err := c.AnswerPermission(ctx, "p1", "allow", "", "rt_1"); err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		rt.set(map[string]any{"status": "ended", "exit_code": 0, "stop_reason": string(sdk.StopEndTurn)})
		_, _ = rt.events.Write(event.Event{"event": string(sdk.EventSessionEnd), "stop_reason": string(sdk.StopEndTurn)})
	}()
	out, err = c.Await(ctx, "rt_1", client.AwaitOptions{Until: client.UntilDone})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.RuntimeID, out.Phase, out.Runtime.StopReason)

	// Output:
	// permission: Run make test?
	// rt_1 done end_turn
}
