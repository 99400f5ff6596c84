package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
)

// logLevels are the levels avenor's own log takes (--log-level, AVENOR_LOG).
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// Environment variables of avenor's own log. AVENOR_LOG_LEVEL is the older
// name, still read when AVENOR_LOG is unset.
const (
	logEnv       = "AVENOR_LOG"
	logLevelEnv  = "AVENOR_LOG_LEVEL"
	defaultLevel = "warn"
)

// logFlags are the global --log-level and --log-file, shared by every
// command of one Main.
type logFlags struct {
	level, file string
	// resolved is the level in effect (flag, else AVENOR_LOG, else
	// AVENOR_LOG_LEVEL, else warn), set by open.
	resolved string
	out      *os.File // the --log-file, opened by open
}

// addLogFlags registers --log-level and --log-file on root, for every
// command, and checks and opens them before any command runs.
func addLogFlags(root *cobra.Command, env Env) {
	lf := env.log
	pf := root.PersistentFlags()
	pf.StringVar(&lf.level, "log-level", "", "avenor's log level on stderr: trace, debug, info, warn or error (default: $AVENOR_LOG, else warn)")
	pf.StringVar(&lf.file, "log-file", "", "append avenor's log, its plugins' included, to this file instead of stderr")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return lf.open(env) }
}

// open resolves the level and opens --log-file. A bad --log-level is a
// usage error (exit 2); a bad AVENOR_LOG fails the command (exit 1).
func (lf *logFlags) open(env Env) error {
	switch {
	case lf.level != "":
		if !validLevel(lf.level) {
			return usageError{fmt.Errorf("--log-level %q: want one of %s", lf.level, strings.Join(logLevels, ", "))}
		}
		lf.resolved = lf.level
	case env.Getenv != nil && env.Getenv(logEnv) != "":
		v := env.Getenv(logEnv)
		if !validLevel(v) {
			return fmt.Errorf("%s=%q is not a log level; set it to one of %s, or unset it", logEnv, v, strings.Join(logLevels, ", "))
		}
		lf.resolved = v
	}
	if lf.file != "" && lf.out == nil {
		f, err := os.OpenFile(lf.file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		lf.out = f
	}
	return nil
}

// close closes the --log-file once the command has ended.
func (lf *logFlags) close() {
	if lf != nil && lf.out != nil {
		_ = lf.out.Close()
		lf.out = nil
	}
}

func validLevel(s string) bool { return slices.Contains(logLevels, strings.ToLower(s)) }

// newLogger is avenor's own logger: to --log-file when given, else to
// env.Stderr (through the live view when it is on), at the level of
// --log-level, AVENOR_LOG or AVENOR_LOG_LEVEL, warn by default. Plugins'
// logs arrive through it, each under its plugin's name.
func newLogger(env Env) hclog.Logger {
	out, level := env.Stderr, ""
	if env.log != nil {
		level = env.log.resolved
		if env.log.out != nil {
			out = env.log.out
		}
	}
	if level == "" && env.Getenv != nil {
		level = orDefault(env.Getenv(logLevelEnv), defaultLevel)
	}
	if level == "" {
		level = defaultLevel
	}
	return hclog.New(&hclog.LoggerOptions{Name: "avenor", Output: out, Level: hclog.LevelFromString(level)})
}
