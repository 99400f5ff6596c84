package runtime

import "testing"

func TestCapabilityTable(t *testing.T) {
	info := BackendInfo{Capabilities: Supports(CapNewSessions, CapPrompt, CapResume).
		With(CapResume, Experimental).
		With(CapModelSelection, Unverified)}
	for _, tc := range []struct {
		cap  Capability
		want Support
	}{
		{CapNewSessions, Supported},
		{CapPrompt, Supported},
		{CapResume, Experimental}, // With overrides what Supports said
		{CapModelSelection, Unverified},
		{CapCancel, Unsupported}, // not named: unsupported, as an absent entry always was
		{CapPrewarm, Unsupported},
	} {
		if got := info.Capability(tc.cap); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.cap, got, tc.want)
		}
	}
	if n := len(info.Capabilities); n != 4 {
		t.Errorf("table has %d entries, want the 4 named: %v", n, info.Capabilities)
	}
	if len(Supports()) != 0 {
		t.Error("Supports() with nothing named is not empty")
	}
}
