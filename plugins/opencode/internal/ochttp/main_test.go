package ochttp

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine a session starts (event stream, permission waits, the
// prompt request) has an owner that stops it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
