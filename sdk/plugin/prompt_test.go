package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/avenor-go/avenor/sdk/runtime"
)

// A prompt the wire cannot carry is refused by the client as the user's
// fault, before it is sent, and the session stays usable; a prompt of
// exactly MaxPromptBytes crosses the real gRPC stream. Sending an invalid
// one used to break the stream ("its connection failed"), blaming the
// plugin.
func TestPromptBoundsOverTheWire(t *testing.T) {
	b := serveFake(t, func(_ context.Context, _ runtime.Host, turn runtime.Turn) (runtime.TurnResult, error) {
		return runtime.TurnResult{StopReason: runtime.StopEndTurn, FinalOutput: turn.Text[:1] + "/" + string(rune('0'+len(turn.Text)%10))}, nil
	})
	sess, err := b.Open(context.Background(), runtime.OpenRequest{Backend: "fake"}, &recHost{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	for _, tc := range []struct {
		name, text string
		kind       error
	}{
		{"not UTF-8", "hi\xff", runtime.ErrPromptNotUTF8},
		{"over the limit", strings.Repeat("x", runtime.MaxPromptBytes+1), runtime.ErrPromptTooLarge},
	} {
		res, err := sess.Prompt(context.Background(), runtime.Turn{ID: tc.name, Text: tc.text})
		if !errors.Is(err, tc.kind) || runtime.FaultOf(err) != runtime.FaultUser || res.StopReason != runtime.StopError {
			t.Fatalf("%s: res %+v err %v (fault %s); want a user fault matching %v", tc.name, res, err, runtime.FaultOf(err), tc.kind)
		}
	}
	max := strings.Repeat("y", runtime.MaxPromptBytes)
	res, err := sess.Prompt(context.Background(), runtime.Turn{ID: "max", Text: max})
	if err != nil || res.FinalOutput != "y/"+string(rune('0'+runtime.MaxPromptBytes%10)) {
		t.Fatalf("a MaxPromptBytes prompt after the refusals: res %+v err %v", res, err)
	}
}
