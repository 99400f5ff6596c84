package acp

import (
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// replayEnv names a transcript: the test binary, started with it, plays the
// agent's side of that transcript on its stdio (replay_test.go).
const replayEnv = "ACP_TEST_REPLAY"

func TestMain(m *testing.M) {
	if path := os.Getenv(replayEnv); path != "" {
		os.Exit(replayAgent(path))
	}
	// A CLI that does not speak ACP fails in well under the 5 s it gets in
	// production.
	noiseTimeoutForTest = 300 * time.Millisecond
	goleak.VerifyTestMain(m)
}
