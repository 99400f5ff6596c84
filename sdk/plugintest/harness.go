package plugintest

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/avenor-go/avenor/sdk/plugin"
	"github.com/avenor-go/avenor/sdk/runtime"
)

// TurnKind is a kind of turn the kit asks a backend to run.
type TurnKind string

const (
	// TurnPlain is a short turn that ends with end_turn.
	TurnPlain TurnKind = "plain"
	// TurnLong streams events for a while (a second or more) so that a
	// Cancel, a Close or the plugin's death lands in the middle of it.
	TurnLong TurnKind = "long"
	// TurnPermission asks the host one permission, then ends.
	TurnPermission TurnKind = "permission"
)

// Harness tells the kit what to check and how to make the backends do
// things. The zero value checks a binary with the default prompts; Run also
// needs Plugin and Backends.
type Harness struct {
	// Plugin and Backends are what the plugin's main passes to plugin.Serve.
	// Run serves them in process over real gRPC; RunBinary and VerifyBinary
	// ignore them (a binary describes itself).
	Plugin   plugin.Info
	Backends []runtime.Backend

	// Only limits the checks to these backends. Default: every backend the
	// plugin serves.
	Only []string

	// Prompt returns the prompt that makes backend run a turn of the given
	// kind, and false when the backend cannot be made to. A check that
	// needs a turn the harness cannot give is skipped, unless the backend
	// advertises the capability the check is about: then it fails, since
	// the claim cannot be shown. Default: DefaultPrompt.
	Prompt func(backend string, kind TurnKind) (prompt string, ok bool)

	// Open completes each OpenRequest the kit makes — options, env (a fake
	// runtime on PATH), model — after the kit has set Backend, Dir,
	// StateDir, RunID and ResumeSessionID. Default: nothing.
	Open func(req *runtime.OpenRequest)

	// Skip names checks (e.g. "resume_continues_a_session_by_id") the
	// harness cannot hold this plugin to, each with the reason; they are
	// reported as skipped with it. Use it for a behaviour the backend
	// documents differently, never to hide a failure.
	Skip map[string]string

	// TurnTimeout bounds one turn, and Open, Check and Close. Default 30s.
	TurnTimeout time.Duration
	// CancelWithin is how soon after Cancel, Close or the plugin's death a
	// turn must end. Default 5s.
	CancelWithin time.Duration

	// Logger receives the plugin's logs. Default: none.
	Logger hclog.Logger
}

// DefaultPrompt gives prompts that echo understands (a prompt mentioning
// "permission" makes it ask one) and that an agent driven by a language
// model follows.
func DefaultPrompt(_ string, kind TurnKind) (string, bool) {
	switch kind {
	case TurnPlain:
		return "Reply with the single word: ok", true
	case TurnLong:
		return "Count slowly from one to two hundred, writing every number out in words, one number per line, and say nothing else.", true
	case TurnPermission:
		return "Ask for permission first, then create a file named avenor-conformance.txt containing the word ok.", true
	}
	return "", false
}

// PromptsOr is a Harness.Prompt that sends the prompt given for a kind of
// turn (the map's; "" or absent: DefaultPrompt's), as `avenor plugin
// verify --prompt, --long-prompt, --permission-prompt` do.
func PromptsOr(prompts map[TurnKind]string) func(backend string, kind TurnKind) (string, bool) {
	return func(backend string, kind TurnKind) (string, bool) {
		if p := prompts[kind]; p != "" {
			return p, true
		}
		return DefaultPrompt(backend, kind)
	}
}

func (h Harness) withDefaults() Harness {
	if h.Prompt == nil {
		h.Prompt = DefaultPrompt
	}
	if h.Open == nil {
		h.Open = func(*runtime.OpenRequest) {}
	}
	if h.TurnTimeout <= 0 {
		h.TurnTimeout = 30 * time.Second
	}
	if h.CancelWithin <= 0 {
		h.CancelWithin = 5 * time.Second
	}
	if h.Logger == nil {
		h.Logger = hclog.NewNullLogger()
	}
	return h
}

// wants reports whether backend is to be checked.
func (h Harness) wants(backend string) bool {
	if len(h.Only) == 0 {
		return true
	}
	for _, b := range h.Only {
		if b == backend {
			return true
		}
	}
	return false
}
