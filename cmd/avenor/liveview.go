package main

import (
	"os"

	"github.com/avenor-go/avenor/host/liveview"
)

// newView is the run's live view (--progress, --quiet): on when stderr is a
// terminal unless asked otherwise. The returned Env's Stderr goes through
// the view, so avenor's own messages never land inside its status line;
// with the view off it is env unchanged, byte for byte what a harness saw
// before.
func newView(f *runFlags, env Env) (*liveview.View, Env, error) {
	file, _ := env.Stderr.(*os.File)
	terminal := liveview.IsTerminal(file)
	mode, err := liveview.Choose(f.progress, f.quiet, terminal)
	if err != nil {
		return nil, env, err
	}
	v := liveview.New(liveview.Options{Out: env.Stderr, Mode: mode, Color: mode == liveview.TTY && !noColorEnv(env)})
	env.Stderr, env.stderrTerminal = v.Writer(), env.stderrTerminal || terminal
	return v, env, nil
}
