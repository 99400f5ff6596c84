package runtime

import (
	"context"
	"errors"
	"testing"
)

type plainSession struct{ Session }

type compactingSession struct {
	Session
	called bool
}

func (c *compactingSession) Compact(context.Context) (TurnResult, error) {
	c.called = true
	return TurnResult{StopReason: StopEndTurn}, nil
}

// TestCompact: a compaction reaches a session through Compactor only when
// its backend declares CapCompaction; otherwise it ends unsupported.
func TestCompact(t *testing.T) {
	declares := BackendInfo{Name: "b", Capabilities: Supports(CapCompaction)}
	silent := BackendInfo{Name: "b"}
	for _, tc := range []struct {
		name        string
		sess        Session
		info        BackendInfo
		unsupported bool
	}{
		{"declared and implemented", &compactingSession{}, declares, false},
		{"implemented, not declared", &compactingSession{}, silent, true},
		{"declared, not implemented", plainSession{}, declares, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Compact(context.Background(), tc.sess, tc.info)
			var e *Error
			if got := errors.As(err, &e) && e.Code == CodeUnsupported; got != tc.unsupported {
				t.Fatalf("unsupported %v (%v), want %v", got, err, tc.unsupported)
			}
			if tc.unsupported && res.StopReason != StopError {
				t.Errorf("stop reason %q, want error", res.StopReason)
			}
			if c, ok := tc.sess.(*compactingSession); ok && c.called == tc.unsupported {
				t.Errorf("Compact called %v, want %v", c.called, !tc.unsupported)
			}
		})
	}
}
