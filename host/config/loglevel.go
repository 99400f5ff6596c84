package config

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// LogLevels are the levels avenor's own log takes (--log-level, AVENOR_LOG).
var LogLevels = []string{"trace", "debug", "info", "warn", "error"}

// Environment variables of avenor's own log. AVENOR_LOG_LEVEL is the older
// name, still read when AVENOR_LOG is unset.
const (
	LogEnv          = "AVENOR_LOG"
	LogLevelEnv     = "AVENOR_LOG_LEVEL"
	DefaultLogLevel = "warn"
)

// LogLevel is the level of avenor's own log: flag (--log-level) when
// given, else AVENOR_LOG, else AVENOR_LOG_LEVEL (unchecked, as it always
// was), else warn. A flag or an AVENOR_LOG that is not a level is an error
// naming it; flagWrong says it was the flag (a usage error). getenv nil
// reads nothing.
func LogLevel(flag string, getenv func(string) string) (level string, flagWrong bool, err error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	switch env := getenv(LogEnv); {
	case flag != "":
		if !validLogLevel(flag) {
			return "", true, fmt.Errorf("--log-level %q: want one of %s", flag, strings.Join(LogLevels, ", "))
		}
		return flag, false, nil
	case env != "":
		if !validLogLevel(env) {
			return "", false, fmt.Errorf("%s=%q is not a log level; set it to one of %s, or unset it", LogEnv, env, strings.Join(LogLevels, ", "))
		}
		return env, false, nil
	case getenv(LogLevelEnv) != "":
		return getenv(LogLevelEnv), false, nil
	}
	return DefaultLogLevel, false, nil
}

func validLogLevel(s string) bool { return slices.Contains(LogLevels, strings.ToLower(s)) }

// NewLogger is avenor's own logger, named avenor, at level, to out.
// Plugins' logs arrive through it, each under its plugin's name.
func NewLogger(out io.Writer, level string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "avenor", Output: out, Level: hclog.LevelFromString(level)})
}
