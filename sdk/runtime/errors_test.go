package runtime

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code Code
		is   error
	}{
		{"a sentinel argument gives the code", Errorf(FaultUser, "session %q: %v", "x", ErrSessionNotFound), CodeSessionNotFound, ErrSessionNotFound},
		{"a wrapped sentinel too", Errorf(FaultUser, "open: %v", fmt.Errorf("load: %w", ErrAuthRequired)), CodeAuthRequired, ErrAuthRequired},
		{"WithCode", Errorf(FaultRuntime, "no binary").WithCode(CodeRuntimeMissing), CodeRuntimeMissing, ErrRuntimeMissing},
		{"a code alone, as from the wire", &Error{Fault: FaultUser, Message: "m", Code: CodeUnsupported}, CodeUnsupported, ErrUnsupported},
		{"no code", Errorf(FaultPlugin, "boom"), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.code {
				t.Errorf("CodeOf = %q, want %q", got, tt.code)
			}
			for _, s := range sentinels {
				if got, want := errors.Is(tt.err, s), s == tt.is; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v", s, got, want)
				}
			}
		})
	}
}
