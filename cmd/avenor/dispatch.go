package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	hostrun "github.com/avenor-go/avenor/host/run"
	hostrt "github.com/avenor-go/avenor/host/runner"
	"github.com/avenor-go/avenor/sdk/plugin"
)

// Env is the process environment Main runs in; tests fill it.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Environ        []string

	// log is the global --log-level and --log-file (logging.go); newRoot
	// sets it when nil.
	log *logFlags
	// stderrTerminal remembers that Stderr was a terminal before the live
	// view put its own writer in front of it (newView).
	stderrTerminal bool
}

// stderrIsTerminal says whether the process's stderr is a terminal, also
// when the live view's writer stands in front of it.
func (e Env) stderrIsTerminal() bool {
	return e.stderrTerminal || isTerminal(e.Stderr)
}

// resolveEnv is what host/run reads of this process.
func (e Env) resolveEnv(logger hclog.Logger) hostrun.Env {
	return hostrun.Env{Getenv: e.Getenv, Environ: e.Environ, Logger: logger}
}

// newLogger is avenor's own logger (logging.go: --log-level, --log-file,
// AVENOR_LOG).
func (e Env) newLogger() hclog.Logger { return newLogger(e) }

// interruptible is a context that SIGINT or SIGTERM cancels with
// hostrt.ErrInterrupted as its cause: a run then ends cancelled, exit 130.
// stop stops listening for the signals and cancels it.
func interruptible() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancel(hostrt.ErrInterrupted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// writeJSON prints v as indented JSON (--json of backends and plugin).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Exit codes of the command line itself (run's codes follow its stop reason).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// usageError is a command line the parser could not take: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitError carries an exit code chosen by a command.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs avenor with args (without the program name) and returns the exit code.
func Main(args []string, env Env) int {
	// A host killed before it stopped its plugins left their socket
	// directories; the next avenor of the same user removes them.
	plugin.RemoveStaleSocketDirs()
	env.log = &logFlags{}
	defer env.log.close()
	root := newRoot(env)
	args = defaultToRun(root, args)
	if cmd, _, err := root.Find(args); err == nil && cmd != nil {
		args = rewriteSingleDash(cmd, args)
	}
	root.SetArgs(args)
	err := root.Execute()
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		if len(args) > 0 && args[0] == "run" {
			writeUsageSentinel(args[1:], env.Stderr)
		}
		fmt.Fprintf(env.Stderr, "avenor: %v\n", ue.err)
		fmt.Fprintln(env.Stderr, "Run 'avenor --help' for usage.")
		return exitUsage
	default:
		fmt.Fprintf(env.Stderr, "avenor: %v\n", err)
		return exitFail
	}
}

func newRoot(env Env) *cobra.Command {
	if env.log == nil {
		env.log = &logFlags{}
	}
	root := &cobra.Command{
		Use:               "avenor",
		Short:             "Drive AI coding-agent runtimes and turn what they say into one NDJSON event stream",
		Long:              help("avenor"),
		SilenceErrors:     true,
		SilenceUsage:      true,
		Version:           Version,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetVersionTemplate("avenor v{{.Version}}\n")
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{flagHint(cmd, err)} })
	root.Flags().BoolP("version", "v", false, "print the version and exit")
	addLogFlags(root, env)
	root.AddCommand(newRunCmd(env), newBackendsCmd(env), newAnswerCmd(env), newWatchCmd(env), newControlCmd(env), newPluginCmd(env))
	root.AddCommand(newVerifyCmd(env))
	root.AddCommand(newStableCmd(env))
	root.AddCommand(newFleetCmd(env))
	root.AddCommand(newAwaitCmd(env))
	root.AddCommand(newBoardCmd(env))
	root.AddCommand(newDocsCmd(env))
	root.AddCommand(newProbeCmd(env))
	root.AddCommand(newVersionCmd(env))
	root.AddCommand(newClaudeChannelCmd(env), newChannelCleanupCmd(env))
	root.AddCommand(newMCPCmd(env))
	root.AddCommand(newCompletionCmd(env), newConfigCmd(env))
	registerBackendCompletion(root, env)
	applyExamples(root)
	return root
}

// defaultToRun keeps the original's dispatch: anything that is not a
// sub-command (or --version / --help alone) is parsed as `run` flags.
func defaultToRun(root *cobra.Command, args []string) []string {
	if len(args) == 0 {
		return args
	}
	switch args[0] {
	case "__complete", "__completeNoDesc": // cobra's shell completion
		// `avenor --backend <TAB>` is a run's command line: complete it
		// as run's, as the dispatch below would run it.
		if len(args) > 1 && strings.HasPrefix(args[1], "-") {
			return append([]string{args[0], "run"}, args[1:]...)
		}
		return args
	case "--version", "-version", "-v", "--help", "-help", "-h", "help":
		if len(args) == 1 {
			return args
		}
	}
	for _, c := range root.Commands() {
		if c.Name() == args[0] || c.HasAlias(args[0]) {
			return args
		}
	}
	return append([]string{"run"}, args...)
}

// rewriteSingleDash turns the original's single-dash long flags (-prompt x,
// -backend=pi) into cobra's --prompt, only where a flag of cmd is meant, and
// never touches flag values (a prompt may well start with "-").
func rewriteSingleDash(cmd *cobra.Command, args []string) []string {
	flags := cmd.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		name, hasValue := "", false
		switch {
		case strings.HasPrefix(a, "--"):
			name = a[2:]
		case strings.HasPrefix(a, "-") && len(a) > 2:
			name = a[1:]
		default:
			out = append(out, a)
			continue
		}
		if j := strings.IndexByte(name, '='); j >= 0 {
			name, hasValue = name[:j], true
		}
		f := flags.Lookup(name)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(name) // --log-level, --log-file
		}
		if f == nil && (name == "help" || name == "version") {
			// cobra adds --help (and the root's --version) only when it
			// runs, so they are not in the flag set yet.
			out = append(out, "--"+name)
			continue
		}
		if f == nil {
			out = append(out, a)
			continue
		}
		if !strings.HasPrefix(a, "--") {
			a = "-" + a
		}
		out = append(out, a)
		if !hasValue && takesValue(f) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

func takesValue(f *pflag.Flag) bool { return f.NoOptDefVal == "" }

// noArgs is the Args of a command that takes none: refuse says why the
// first argument given is one too many.
func noArgs(refuse func(arg string) error) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return refuse(args[0])
		}
		return nil
	}
}
