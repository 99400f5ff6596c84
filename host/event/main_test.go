package event

import (
	"testing"

	"go.uber.org/goleak"
)

// Every subscription owns a goroutine; a test that forgets Close fails here.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
