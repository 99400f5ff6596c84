package plugin

import "testing"

// TestLingersIn: a plugin lingers when the last LingerEnv of its own
// environment (the one exec keeps) is a positive window.
func TestLingersIn(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want bool
	}{
		{nil, false},
		{[]string{"HOME=/h"}, false},
		{[]string{LingerEnv + "=60s"}, true},
		{[]string{LingerEnv + "=0s"}, false},
		{[]string{LingerEnv + "=-1s"}, false},
		{[]string{LingerEnv + "=soon"}, false},
		{[]string{LingerEnv + "="}, false},
		{[]string{LingerEnv + "=60s", LingerEnv + "=0s"}, false},
		{[]string{LingerEnv + "=0s", LingerEnv + "=1ms"}, true},
		{[]string{LingerEnv + "X=60s"}, false},
	} {
		if got := lingersIn(tc.env); got != tc.want {
			t.Errorf("lingersIn(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}
