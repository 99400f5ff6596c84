package docgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Bound is one documented limit: an exported constant, found by parsing
// its package's source (so the docs need no import of packages other
// developers are changing), and what it bounds.
type Bound struct {
	Dir   string // package directory, relative to the repository root
	Name  string // the constant
	Scope string // where the bound applies
	Means string
}

// Bounds is the bounds table of configuration.md. A constant listed here
// that disappears or stops being a simple expression fails `make docs` and
// the drift test, so the table cannot silently go stale.
var Bounds = []Bound{
	{"host/control", "MaxRequestLine", "control socket", "longest request line; the rest of a longer line is discarded and the connection goes on"},
	{"host/control", "DefaultHistoryLimit", "control `history`, `subscribe` replay", "events returned when `limit` is absent"},
	{"host/control", "MaxHistoryLimit", "control `history`, `subscribe` replay", "largest `limit` honoured"},
	{"host/event", "DefaultHistory", "event history per runtime", "events kept in memory for `history` and replay (the NDJSON file keeps all)"},
	{"host/event", "DefaultQueue", "each subscription", "queued events before the oldest is dropped and `subscriber.lagged` sent"},
	{"host/event", "FinalOutputLimit", "control views of `session.end`", "runes of `final_output` in status, history and notifications (`final_output_truncated` set); the log keeps it whole"},
	{"host/runtime", "MaxQueuedPrompts", "one run", "prompts queued by `prompt` behind the turn in flight"},
	{"host/runtime", "DefaultCancelBudget", "one run", "time a plugin gets to end a cancelled or timed-out turn"},
	{"host/permission", "DefaultPollInterval", "file permission handler", "how often `<base>.req.response` is polled"},
	{"host/permission", "DefaultTimeout", "file permission handler", "how long a `.req` waits for its response before the attempt fails"},
	{"host/permission", "MaxMessageBytes", "permission answers", "longest `message` of an answer (file, socket or HTTP)"},
	{"host/loop", "DefaultMaxIterations", "loop config", "`max_iterations` when absent or 0"},
	{"host/loop", "MaxIterationsLimit", "loop config", "largest `max_iterations` accepted"},
	{"host/loop", "DefaultMaxNudges", "phase `on_incomplete`", "`max_nudges` when absent"},
	{"host/stable", "DefaultMaxRuntimes", "`avenor stable`", "`--max-runtimes` default: live runtimes before spawn is refused"},
	{"host/stable", "DefaultMaxTreeBudget", "`avenor stable`", "runtimes in one parent/child tree (`tree_budget` capacity)"},
	{"host/stable", "DefaultParkedTimeout", "`avenor stable`", "how long an idle runtime keeps its session open for follow-ups"},
	{"host/stable", "DefaultShutdownTimeout", "`avenor stable`", "`--shutdown-timeout` default for a graceful shutdown"},
	{"host/stable", "DefaultMaxKeptPlugins", "`avenor stable`", "idle plugin processes kept for fast follow-ups"},
	{"host/stable", "IdempotencyTTL", "spawn `idempotency_key`", "how long a key's result is remembered"},
	{"host/stable", "IdempotencyCapacity", "spawn `idempotency_key`", "keys remembered at once"},
	{"host/stable", "MaxParentMessage", "`send_to_parent`", "longest `message`"},
	{"sdk/agentproc", "DefaultMaxLineBytes", "plugins (runtime stdout)", "longest line read from an agent CLI; a longer line is discarded"},
	{"sdk/agentproc", "DefaultStderrTailBytes", "plugins (runtime stderr)", "end of stderr kept for crash reports"},
	{"sdk/agentproc", "DefaultCancelGrace", "plugins", "grace between asking an agent CLI to stop and killing it"},
	{"sdk/acp", "DefaultInitTimeout", "ACP backends", "time for `initialize`"},
	{"sdk/acp", "DefaultSessionTimeout", "ACP backends", "time for `session/new` or `session/load`"},
	{"sdk/acp", "DefaultCancelWait", "ACP backends", "wait for the turn to end after `session/cancel`"},
	{"sdk/acp", "DefaultWriteTimeout", "ACP backends", "one write to the agent's stdin"},
	{"sdk/acp", "DefaultQueueSize", "ACP backends", "messages read ahead from the agent before reading pauses"},
	{"sdk/mcpconfig", "MaxFileBytes", "`.mcp.json` edits (claude-channel, `claude-channel-cleanup`)", "largest file rewritten; a larger one is an error and left as it is"},
	{"plugins/claude/internal/channel", "MaxBodyBytes", "claude-channel broker", "largest request body (413 beyond)"},
	{"plugins/claude/internal/channel", "MaxPollWait", "claude-channel broker", "longest `/poll-control` long-poll"},
	{"plugins/claude/internal/channel", "MaxQueuedControls", "claude-channel broker", "control messages waiting for the sidecar (429 beyond)"},
	{"plugins/claude/internal/channel", "HeartbeatInterval", "claude-channel sidecar", "time between heartbeats"},
	{"plugins/claude/internal/channel", "MaxFrameBytes", "claude-channel sidecar", "longest MCP stdio line; a longer one is answered with a parse error"},
}

// BoundsTable renders Bounds from the source under root.
func BoundsTable(root string) (string, error) {
	var b strings.Builder
	b.WriteString("| applies to | bound | value | constant |\n|---|---|---|---|\n")
	consts := map[string]map[string]ast.Expr{}
	for _, bd := range Bounds {
		cs, ok := consts[bd.Dir]
		if !ok {
			var err error
			if cs, err = packageConsts(filepath.Join(root, bd.Dir)); err != nil {
				return "", err
			}
			consts[bd.Dir] = cs
		}
		e, ok := cs[bd.Name]
		if !ok {
			return "", fmt.Errorf("bounds: constant %s not found in %s", bd.Name, bd.Dir)
		}
		v, err := evalConst(e, cs)
		if err != nil {
			return "", fmt.Errorf("bounds: %s.%s: %w", bd.Dir, bd.Name, err)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s.%s` |\n", bd.Scope, cell(bd.Means), v.String(bd.Name), filepath.Base(bd.Dir), bd.Name)
	}
	return b.String(), nil
}

func packageConsts(dir string) (map[string]ast.Expr, error) {
	out := map[string]ast.Expr{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						out[n.Name] = vs.Values[i]
					}
				}
			}
		}
	}
	return out, nil
}

type constVal struct {
	n        int64
	duration bool
}

func (v constVal) String(name string) string {
	switch {
	case v.duration:
		return time.Duration(v.n).String()
	case (strings.Contains(name, "Line") || strings.Contains(name, "Bytes") || strings.Contains(name, "Message")) && v.n >= 1<<20 && v.n%(1<<20) == 0:
		return strconv.FormatInt(v.n>>20, 10) + " MiB"
	case (strings.Contains(name, "Line") || strings.Contains(name, "Bytes") || strings.Contains(name, "Message")) && v.n >= 1<<10 && v.n%(1<<10) == 0:
		return strconv.FormatInt(v.n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(v.n, 10)
}

var timeUnits = map[string]time.Duration{
	"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
	"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour,
}

// evalConst evaluates the simple constant expressions bounds are written
// in: integers, time units, *, <<, parentheses and same-package names.
func evalConst(e ast.Expr, cs map[string]ast.Expr) (constVal, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.INT {
			return constVal{}, fmt.Errorf("not an integer: %s", x.Value)
		}
		n, err := strconv.ParseInt(x.Value, 0, 64)
		return constVal{n: n}, err
	case *ast.ParenExpr:
		return evalConst(x.X, cs)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && id.Name == "time" {
			if d, ok := timeUnits[x.Sel.Name]; ok {
				return constVal{n: int64(d), duration: true}, nil
			}
		}
	case *ast.Ident:
		if o, ok := cs[x.Name]; ok {
			return evalConst(o, cs)
		}
	case *ast.BinaryExpr:
		l, err := evalConst(x.X, cs)
		if err != nil {
			return constVal{}, err
		}
		r, err := evalConst(x.Y, cs)
		if err != nil {
			return constVal{}, err
		}
		switch x.Op {
		case token.MUL:
			return constVal{n: l.n * r.n, duration: l.duration || r.duration}, nil
		case token.SHL:
			return constVal{n: l.n << r.n, duration: l.duration}, nil
		case token.ADD:
			return constVal{n: l.n + r.n, duration: l.duration || r.duration}, nil
		}
	}
	return constVal{}, fmt.Errorf("cannot evaluate %T", e)
}
