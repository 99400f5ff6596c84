package turn

import (
	"sync"
	"testing"
)

func TestPublish(t *testing.T) {
	type state struct{ n int }
	var (
		mu   sync.Mutex
		slot *state
	)
	first := &state{1}
	clearFirst := Publish(&mu, &slot, first)
	if slot != first {
		t.Fatalf("slot = %v after Publish, want the published state", slot)
	}
	clearFirst()
	if slot != nil {
		t.Fatalf("slot = %v after clear, want nil", slot)
	}

	// A clear that comes after another turn's state took the slot leaves
	// that state alone.
	clearFirst = Publish(&mu, &slot, first)
	second := &state{2}
	clearSecond := Publish(&mu, &slot, second)
	clearFirst()
	if slot != second {
		t.Fatalf("slot = %v after the first turn's late clear, want the second turn's state", slot)
	}
	clearSecond()
	if slot != nil {
		t.Fatalf("slot = %v, want nil", slot)
	}
}
