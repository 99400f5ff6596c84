//go:build reliability

package hosttest

import "time"

func init() { runGuard = 10 * time.Minute }
