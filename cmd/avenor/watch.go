package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/avenor-go/avenor/host/liveview"
	"github.com/avenor-go/avenor/host/watch"
)

// watchFlags are the flags of `avenor watch` (docs/watch.md).
type watchFlags struct {
	follow, classify, noColor     bool
	format, sinceCursor, sentinel string
	pollInterval                  time.Duration
}

func newWatchCmd(env Env) *cobra.Command {
	f := &watchFlags{}
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
				f.format = string(watch.Transcript)
			}
			return runWatch(cmd.Context(), env, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.follow, "follow", false, "poll and tail the log; exit 0 when the run is over or on SIGINT/SIGTERM")
	fl.StringVar(&f.format, "format", string(watch.Plain), "plain digest lines, json pass-through, or transcript for a person (the default on a terminal)")
	fl.BoolVar(&f.classify, "classify", false, `prefix MILESTONE/FINDING/ACTIVITY (json: add a top-level "classify")`)
	fl.DurationVar(&f.pollInterval, "poll-interval", watch.DefaultPollInterval, "follow-mode sleep between polls")
	fl.StringVar(&f.sinceCursor, "since-cursor", "", "cursor file: start at its byte offset, save the new one on exit")
	fl.StringVar(&f.sentinel, "sentinel-file", "", "with --follow: the run's sentinel; exit once it appears and the log is read")
	fl.BoolVar(&f.noColor, "no-color", false, "never colour the output")
	return cmd
}

func runWatch(ctx context.Context, env Env, f *watchFlags, log string) error {
	format, err := watch.ParseFormat(f.format)
	if err != nil {
		return usageError{err}
	}
	if f.pollInterval <= 0 {
		return usageError{fmt.Errorf("--poll-interval must be positive, not %v", f.pollInterval)}
	}
	if f.sentinel != "" && !f.follow {
		return usageError{fmt.Errorf("--sentinel-file says when a follow ends; add --follow or drop it")}
	}
	if f.sinceCursor != "" && log == watch.Stdin {
		return usageError{fmt.Errorf("--since-cursor needs a log file, and - is standard input; drop --since-cursor or name the log")}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	res, err := watch.Run(ctx, log, env.Stdout, watch.Config{
		Follow: f.follow,
		Printer: watch.Printer{
			Format:   format,
			Classify: f.classify,
			Color:    format == watch.Plain && !f.noColor && !noColorEnv(env) && isTerminal(env.Stdout),
		},
		PollInterval: f.pollInterval,
		CursorPath:   f.sinceCursor,
		SentinelPath: f.sentinel,
		Stderr:       env.Stderr,
	})
	if res.Malformed > 0 {
		fmt.Fprintf(env.Stderr, "avenor watch: skipped %d malformed line(s) in %s\n", res.Malformed, log)
	}
	if err != nil {
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
