package plugin

import (
	"strings"

	"github.com/hashicorp/go-hclog"
)

// pluginLogger is the logger go-plugin gets for one plugin, already named
// after the plugin's binary. go-plugin names the logger of the plugin's
// stderr after the binary once more, and passes the plugin's own logger
// name along as @module; unchecked, every plugin line would carry the name
// three times ("avenor.avenor-plugin-codex.avenor-plugin-codex: …
// @module=avenor-plugin-codex"). It keeps the name once, and turns a
// sub-logger's @module ("avenor-plugin-codex.session") into a name
// ("avenor.avenor-plugin-codex.session").
type pluginLogger struct {
	hclog.Logger
	name string // the binary's base name, e.g. "avenor-plugin-codex"
}

func (l pluginLogger) Named(name string) hclog.Logger {
	if name == l.name {
		return l
	}
	return pluginLogger{Logger: l.Logger.Named(name), name: l.name}
}

func (l pluginLogger) Log(level hclog.Level, msg string, args ...any) {
	lg, args := l.module(args)
	lg.Log(level, msg, args...)
}

func (l pluginLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l pluginLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l pluginLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l pluginLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l pluginLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// module drops an @module pair that repeats the plugin's name, naming the
// logger after what follows the name, if anything.
func (l pluginLogger) module(args []any) (hclog.Logger, []any) {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k != "@module" {
			continue
		}
		v, _ := args[i+1].(string)
		sub, ok := strings.CutPrefix(v, l.name)
		if !ok || (sub != "" && sub[0] != '.') {
			return l.Logger, args
		}
		rest := append(append([]any{}, args[:i]...), args[i+2:]...)
		if sub == "" {
			return l.Logger, rest
		}
		return l.Logger.Named(sub[1:]), rest
	}
	return l.Logger, args
}
