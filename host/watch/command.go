package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Command is `avenor watch` as its flags gave it (docs/watch.md).
type Command struct {
	Format                    string
	Follow, Classify, NoColor bool
	PollInterval              time.Duration
	SinceCursor, Sentinel     string
}

// Check refuses flags that do not go together for log; each error is a
// usage error that names the fix.
func (c Command) Check(log string) (Format, error) {
	format, err := ParseFormat(c.Format)
	if err != nil {
		return "", err
	}
	if c.PollInterval <= 0 {
		return "", fmt.Errorf("--poll-interval must be positive, not %v", c.PollInterval)
	}
	if c.Sentinel != "" && !c.Follow {
		return "", errors.New("--sentinel-file says when a follow ends; add --follow or drop it")
	}
	if c.SinceCursor != "" && log == Stdin {
		return "", errors.New("--since-cursor needs a log file, and - is standard input; drop --since-cursor or name the log")
	}
	return format, nil
}

// Run digests log (Check's format) to out until it is read (or, following,
// the run is over or ctx ends). colorOut says out is a terminal that may
// be coloured (plain format only, never with NoColor). The malformed lines
// skipped are counted on stderr.
func (c Command) Run(ctx context.Context, log string, format Format, out, stderr io.Writer, colorOut bool) error {
	res, err := Run(ctx, log, out, Config{
		Follow: c.Follow,
		Printer: Printer{
			Format:   format,
			Classify: c.Classify,
			Color:    format == Plain && !c.NoColor && colorOut,
		},
		PollInterval: c.PollInterval,
		CursorPath:   c.SinceCursor,
		SentinelPath: c.Sentinel,
		Stderr:       stderr,
	})
	if res.Malformed > 0 {
		fmt.Fprintf(stderr, "avenor watch: skipped %d malformed line(s) in %s\n", res.Malformed, log)
	}
	return err
}
