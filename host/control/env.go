package control

import (
	"fmt"
	"os"
	"strconv"
)

// Environment variables of docs/configuration.md#other-environment-variables.
const (
	// EnvReadyFD names an inherited fd that gets one byte once the socket
	// listens.
	EnvReadyFD = "AVENOR_CONTROL_READY_FD"
	// EnvIdentityToken is the token the identity method answers, so a
	// parent can tell it reached its own child.
	EnvIdentityToken = "AVENOR_CONTROL_IDENTITY_TOKEN"
)

// TakeEnv reads the identity token and the ready fd from the process
// environment and unsets both, so no runtime this process starts inherits
// them. ready (nil when no fd was given) writes the one byte and closes the
// fd; err reports a ready fd that is not a number, which is then ignored.
func TakeEnv() (token string, ready func(), err error) {
	token = os.Getenv(EnvIdentityToken)
	_ = os.Unsetenv(EnvIdentityToken)
	v, ok := os.LookupEnv(EnvReadyFD)
	_ = os.Unsetenv(EnvReadyFD)
	if !ok || v == "" {
		return token, nil, nil
	}
	fd, perr := strconv.Atoi(v)
	if perr != nil || fd < 0 {
		return token, nil, fmt.Errorf("%s=%q is not a file descriptor number; no ready byte will be written", EnvReadyFD, v)
	}
	return token, func() {
		f := os.NewFile(uintptr(fd), "avenor-control-ready")
		if f == nil {
			return
		}
		_, _ = f.Write([]byte{'\n'})
		_ = f.Close()
	}, nil
}
