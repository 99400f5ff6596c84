package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/config"
)

// logFlags are the global --log-level and --log-file, shared by every
// command of one Main.
type logFlags struct {
	level, file string
	// resolved is the level in effect (config.LogLevel), set by open.
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
	level, flagWrong, err := config.LogLevel(lf.level, env.Getenv)
	switch {
	case flagWrong:
		return usageError{err}
	case err != nil:
		return err
	}
	lf.resolved = level
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

// newLogger is avenor's own logger: to --log-file when given, else to
// env.Stderr (through the live view when it is on), at the level of
// --log-level, AVENOR_LOG or AVENOR_LOG_LEVEL, warn by default.
func newLogger(env Env) hclog.Logger {
	out, level := env.Stderr, ""
	if env.log != nil {
		level = env.log.resolved
		if env.log.out != nil {
			out = env.log.out
		}
	}
	if level == "" {
		if level, _, _ = config.LogLevel("", env.Getenv); level == "" {
			level = config.DefaultLogLevel
		}
	}
	return config.NewLogger(out, level)
}
