package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/watch"
)

func newWatchCmd(env Env) *cobra.Command {
	f := &watch.Command{}
	cmd := &cobra.Command{
		Use:   "watch [flags] <log|->",
		Short: "Digest an NDJSON event log, once or as it grows",
		Long:  help("watch"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("watch takes one log file (or - for standard input), got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if !fl.Changed("format") && !fl.Changed("classify") && !fl.Changed("follow") && !fl.Changed("since-cursor") && stdoutIsTerminal(env) {
				f.Format = string(watch.Transcript)
			}
			return runWatch(cmd.Context(), env, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.Follow, "follow", false, "poll and tail the log; exit 0 when the run is over or on SIGINT/SIGTERM")
	fl.StringVar(&f.Format, "format", string(watch.Plain), "plain digest lines, json pass-through, or transcript for a person (the default on a terminal)")
	fl.BoolVar(&f.Classify, "classify", false, `prefix MILESTONE/FINDING/ACTIVITY (json: add a top-level "classify")`)
	fl.DurationVar(&f.PollInterval, "poll-interval", watch.DefaultPollInterval, "follow-mode sleep between polls")
	fl.StringVar(&f.SinceCursor, "since-cursor", "", "cursor file: start at its byte offset, save the new one on exit")
	fl.StringVar(&f.Sentinel, "sentinel-file", "", "with --follow: the run's sentinel; exit once it appears and the log is read")
	fl.BoolVar(&f.NoColor, "no-color", false, "never colour the output")
	return cmd
}

func runWatch(ctx context.Context, env Env, f *watch.Command, log string) error {
	format, err := f.Check(log)
	if err != nil {
		return usageError{err}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := f.Run(ctx, log, format, env.Stdout, env.Stderr, !noColorEnv(env) && isTerminal(env.Stdout)); err != nil {
		fmt.Fprintf(env.Stderr, "avenor watch: %v\n", err)
		return exitError{exitFail}
	}
	return nil
}

// stdoutIsTerminal says whether stdout is a terminal (not /dev/null, which
// is a character device too).
func stdoutIsTerminal(env Env) bool {
	f, _ := env.Stdout.(*os.File)
	return liveview.IsTerminal(f)
}

// noColorEnv honours https://no-color.org: NO_COLOR set to anything.
func noColorEnv(env Env) bool {
	return env.Getenv != nil && env.Getenv("NO_COLOR") != ""
}

// isTerminal says whether w is a character device (a terminal); pipes,
// files and buffers are not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
