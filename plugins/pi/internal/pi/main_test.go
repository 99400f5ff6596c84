package pi

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("PI_FAKE") != "" {
		runFakePi()
		return
	}
	os.Exit(m.Run())
}
