package liveview

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/avenor-go/avenor/host/event"
	sdk "github.com/avenor-go/avenor/sdk/runtime"
)

// ANSI styles of the TTY rendering.
const (
	styleDim    = "2"
	styleBold   = "1"
	styleRed    = "31"
	styleGreen  = "32"
	styleYellow = "33"
	styleCyan   = "36"
)

// paint styles s when colour is on.
func (v *View) paint(style, s string) string {
	if !v.o.Color || v.o.Mode != TTY {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

// render draws one event; called with mu held.
func (v *View) render(ev event.Event) {
	if u, ok := ev["usage"].(map[string]any); ok {
		v.tokens = u
	}
	v.lastEvent = v.o.Now()
	switch ev.Type() {
	case sdk.EventMessageChunk, sdk.EventThoughtChunk, sdk.EventToolCall, sdk.EventToolCallUpdate, sdk.EventPermissionRequest, sdk.EventQuestionRequest:
		v.replied = true
	case sdk.EventTurnStart:
		v.turnStart, v.replied = v.lastEvent, false
	}
	switch ev.Type() {
	case sdk.EventPermissionRequest, sdk.EventQuestionRequest:
		v.awaiting = true
	case sdk.EventPermissionResponse, sdk.EventQuestionResponse, sdk.EventSessionEnd:
		v.awaiting = false
	}
	switch ev.Type() {
	case sdk.EventMessageChunk:
		v.text(chunkText(ev))
	case sdk.EventThoughtChunk:
		v.setStatus("thinking", "")
	case sdk.EventAgentStatus:
		v.setStatus(str(ev, "phase"), str(ev, "label"))
	case sdk.EventToolCall:
		title := v.rememberTool(ev)
		v.line(v.paint(styleCyan, "▸ ") + title + v.paint(styleDim, kindSuffix(ev)))
	case sdk.EventToolCallUpdate:
		title := v.toolTitle(ev)
		switch str(ev, "status") {
		case "completed":
			v.line(v.paint(styleGreen, "  ✓ ") + title)
		case "failed":
			v.line(v.paint(styleRed, "  ✗ ") + title + " failed")
		}
	case sdk.EventPermissionRequest:
		v.permissionRequest(ev)
	case sdk.EventPermissionResponse:
		v.permissionResponse(ev)
	case sdk.EventQuestionRequest:
		v.questionRequest(ev)
	case sdk.EventQuestionResponse:
		v.questionResponse(ev)
	case sdk.EventRetry:
		v.line(v.paint(styleYellow, "↻ ") + fmt.Sprintf("retrying: attempt %s of %s", num(ev, "attempt"), plusOne(ev, "max_retries")))
	case sdk.EventWarning:
		v.line(v.paint(styleYellow, "! ") + firstNonEmpty(str(ev, "message"), str(ev, "warning")))
	case sdk.EventSessionStart:
		v.backend = str(ev, "backend")
		parts := []string{str(ev, "backend")}
		if m := str(ev, "model"); m != "" {
			parts = append(parts, m)
		}
		if p := str(ev, "plugin"); p != "" {
			parts = append(parts, "plugin "+p+" "+str(ev, "plugin_version"))
		}
		v.line(v.paint(styleDim, "● "+strings.Join(parts, " · ")))
	case sdk.EventTurnStart:
		if n := num(ev, "turn"); n != "1" && n != "" {
			v.line(v.paint(styleDim, "── turn "+n))
		}
	case sdk.EventSessionEnd:
		v.stop = str(ev, "stop_reason")
		if u, ok := ev["usage"].(map[string]any); ok {
			v.spent = addUsage(v.spent, u)
		}
		v.ends++
		v.setStatus("done", "")
		v.endLine()
	case sdk.EventPhaseStart:
		label := str(ev, "phase")
		if it := num(ev, "iteration"); it != "" && it != "0" {
			label += " (iteration " + it + ")"
		}
		v.line(v.paint(styleBold, "▶ phase "+label) + v.paint(styleDim, kindSuffix(ev)))
	case sdk.EventPhaseEnd:
		v.line(v.paint(styleDim, "◀ phase "+str(ev, "phase")+": "+str(ev, "stop_reason")))
	case sdk.EventLoopEnd, sdk.EventTeamEnd:
		v.line(v.paint(styleDim, strings.TrimPrefix(string(ev.Type()), "avenor.")+": "+str(ev, "exit_reason")))
	case event.TypeWatchdog:
		v.line(v.paint(styleYellow, "⏱ ") + v.watchdogLine(ev))
	case event.TypeRateLimitWait:
		until := sanitizeLine(str(ev, "until"), 40)
		if until == "" {
			until = "an unknown reset"
		}
		v.line(v.paint(styleYellow, "⏸ rate limited: waiting until "+until+", then sending the prompt again (resume "+num(ev, "attempt")+" of "+num(ev, "max_resumes")+")"))
	case event.TypeSubscriberLagged:
		v.line(v.paint(styleYellow, "… "+num(ev, "dropped_count")+" events not shown: the live view fell behind (the event log has them all)"))
	}
}

// text streams agent text.
func (v *View) text(s string) {
	s = sanitize(s)
	if s == "" {
		return
	}
	if v.o.Mode == Plain {
		v.plainText.WriteString(s)
		for {
			buf := v.plainText.String()
			i := strings.IndexByte(buf, '\n')
			if i < 0 {
				return
			}
			v.writeRaw("agent: " + buf[:i] + "\n")
			v.plainText.Reset()
			v.plainText.WriteString(buf[i+1:])
		}
	}
	v.clearStatus()
	v.writeRaw(s)
	v.midLine = !strings.HasSuffix(s, "\n")
	v.redraw()
}

// line prints one line of its own between the streamed text.
func (v *View) line(s string) {
	v.clearStatus()
	v.endLine()
	v.writeRaw(s + "\n")
	v.redraw()
}

// endLine ends streamed text that stopped mid-line.
func (v *View) endLine() {
	if v.o.Mode == Plain {
		if rest := v.plainText.String(); rest != "" {
			v.writeRaw("agent: " + rest + "\n")
			v.plainText.Reset()
		}
		return
	}
	if v.midLine {
		v.writeRaw("\n")
		v.midLine = false
	}
}

func (v *View) writeRaw(s string) { _, _ = io.WriteString(v.o.Out, s) }

// setStatus changes the status line's phase and label.
func (v *View) setStatus(phase, label string) {
	if phase == "" {
		return
	}
	v.phase, v.label = phase, label
	v.redraw()
}

// redraw puts the status line back when the cursor is at a line start.
func (v *View) redraw() {
	if v.o.Mode == TTY && !v.midLine && !v.asking {
		v.drawStatus()
	}
}

func (v *View) drawStatus() {
	parts := []string{}
	if w := v.waitingFor(); w != "" {
		parts = append(parts, w)
	} else if v.phase != "" {
		p := v.phase
		if v.label != "" {
			p += ": " + sanitizeLine(v.label, 60)
		}
		parts = append(parts, p)
	}
	parts = append(parts, formatDuration(v.elapsed()))
	if t := tokenText(v.tokens); t != "" {
		parts = append(parts, t)
	}
	s := "\r\x1b[K" + v.paint(styleDim, "⋯ "+strings.Join(parts, " · "))
	v.writeRaw(s)
	v.statusOn = true
}

func (v *View) clearStatus() {
	if v.statusOn {
		v.writeRaw("\r\x1b[K")
		v.statusOn = false
	}
}

func (v *View) permissionRequest(ev event.Event) {
	id := str(ev, "request_id")
	what := firstNonEmpty(str(ev, "question"), str(ev, "tool"), "permission requested")
	lines := []string{v.paint(styleYellow+";"+styleBold, "? permission "+id+": ") + sanitizeLine(what, 200)}
	if t := str(ev, "tool"); t != "" && t != what {
		lines = append(lines, "  tool: "+sanitizeLine(t, 120))
	}
	opts := options(ev)
	if len(opts) > 0 {
		lines = append(lines, "  options: "+strings.Join(describeOptions(opts), ", "))
	}
	switch str(ev, "resolver") {
	case "automatic":
		lines = append(lines, v.paint(styleDim, "  auto-approving (--auto-approve)"))
	case "file":
		if v.o.PermBase != "" && len(opts) > 0 {
			lines = append(lines, "  answer: "+AnswerCommand(v.o.PermBase, opts[0].id))
		}
		if v.o.ControlSocket != "" && len(opts) > 0 {
			lines = append(lines, "      or: "+ControlAnswerCommand(v.o.ControlSocket, id, opts[0].id))
		}
	case "reserved":
		lines = append(lines, v.paint(styleDim, "  held by a control client"))
		if v.o.ControlSocket != "" && len(opts) > 0 {
			lines = append(lines, "  answer: "+ControlAnswerCommand(v.o.ControlSocket, id, opts[0].id))
		}
	case "none":
		if v.inline && id != "" && len(opts) > 0 {
			v.clearStatus()
			v.endLine()
			v.writeRaw(strings.Join(lines, "\n") + "\n" + v.paint(styleBold, v.askLine(opts)))
			v.midLine = true
			return
		}
	}
	v.line(strings.Join(lines, "\n"))
}

func (v *View) permissionResponse(ev event.Event) {
	opt, src := str(ev, "option_id"), str(ev, "source")
	switch {
	case str(ev, "outcome") == "cancelled":
		v.line(v.paint(styleRed, "  ✗ cancelled") + v.paint(styleDim, " by "+src))
	case str(ev, "kind") == "allow":
		v.line(v.paint(styleGreen, "  ✓ allowed: "+opt) + v.paint(styleDim, " by "+src))
	default:
		v.line(v.paint(styleRed, "  ✗ rejected: "+opt) + v.paint(styleDim, " by "+src))
	}
}

// questionRequest shows a runtime's question: each prompt with its options,
// and how to answer it.
func (v *View) questionRequest(ev event.Event) {
	id := str(ev, "request_id")
	lines := []string{v.paint(styleYellow+";"+styleBold, "? question "+id)}
	prompts, _ := ev["prompts"].([]any)
	for _, p := range prompts {
		m, _ := p.(map[string]any)
		line := "  " + sanitizeLine(str(m, "question"), 200)
		if opts, _ := m["options"].([]any); len(opts) > 0 {
			names := make([]string, 0, len(opts))
			for _, o := range opts {
				if s, ok := o.(string); ok {
					names = append(names, sanitizeLine(s, 60))
				}
			}
			sep := " | "
			if b, _ := m["multi"].(bool); b {
				sep = " + "
			}
			line += v.paint(styleDim, " ["+strings.Join(names, sep)+"]")
		}
		lines = append(lines, line)
	}
	switch {
	case v.o.ControlSocket != "":
		lines = append(lines, "  answer: avenor control --socket "+shellQuote(v.o.ControlSocket)+" answer-question "+shellQuote(id)+" '<answers JSON array>'")
	case v.o.PermBase != "" && str(ev, "resolver") == "file":
		lines = append(lines, "  answer: avenor answer --question "+shellQuote(id)+" --answer <value> "+shellQuote(v.o.PermBase))
	default:
		lines = append(lines, v.paint(styleDim, "  nothing is set up to answer it: in "+formatDuration(time.Duration(intOf(ev["timeout_ms"]))*time.Millisecond)+" the agent goes on without an answer"))
	}
	v.line(strings.Join(lines, "\n"))
}

func (v *View) questionResponse(ev event.Event) {
	if b, _ := ev["answered"].(bool); b {
		v.line(v.paint(styleGreen, "  ✓ answered") + v.paint(styleDim, " by "+str(ev, "source")))
		return
	}
	v.line(v.paint(styleYellow, "  ✗ no answer ("+str(ev, "reason")+"): the agent goes on"))
}

func intOf(x any) int64 {
	switch n := x.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// waitingFor says what a quiet turn waits for, once it has been quiet for
// StallAfter: the runtime's first reply, or its next event.
func (v *View) waitingFor() string {
	now := v.o.Now()
	who := "the runtime"
	if v.backend != "" {
		who = v.backend
	}
	switch {
	case v.stop != "", v.awaiting: // a pending permission says who answers it above
		return ""
	case !v.replied && now.Sub(v.turnStart) >= StallAfter:
		if v.backend == "" {
			return "waiting for the runtime to start"
		}
		return "waiting for " + who + "'s first reply (its model endpoint)"
	case v.replied && now.Sub(v.lastEvent) >= 3*StallAfter:
		return "waiting for " + who + ": nothing for " + formatDuration(now.Sub(v.lastEvent).Truncate(time.Second))
	}
	return ""
}

// stallHint is the likely cause and the fix of a run that ran out of time
// before the runtime said anything.
func (v *View) stallHint(stop string) string {
	if v.replied || (stop != string(sdk.StopTimeout) && stop != string(sdk.StopProgressTimeout)) {
		return ""
	}
	who := "the runtime"
	if v.backend != "" {
		who = v.backend
	}
	return "  " + who + " never replied: its model endpoint is likely unreachable or not set up (network, proxy,\n" +
		"  API key, provider or model settings). Check `avenor backends` (READY) and run the runtime once by itself;\n" +
		"  --progress-timeout 2m ends a stalled turn sooner.\n"
}

// summary prints the end of the run; called with mu held, after the reader
// stopped.
func (v *View) summary(s Summary) {
	v.clearStatus()
	v.endLine()
	stop := firstNonEmpty(string(s.StopReason), v.stop, "unknown")
	style := styleGreen
	if s.ExitCode != 0 {
		style = styleRed
	}
	head := []string{stop, "exit " + strconv.Itoa(s.ExitCode), formatDuration(v.elapsed())}
	tokens := v.tokens
	if v.spent != nil {
		// A loop, a team or a retried run ends several sessions: the
		// summary counts them all, not the last one's.
		tokens = v.spent
	}
	if t := tokenText(tokens); t != "" {
		if v.ends > 1 {
			t += " across " + strconv.Itoa(v.ends) + " turns"
		}
		head = append(head, t)
	}
	out := v.paint(style, "■ "+strings.Join(head, " · ")) + "\n"
	if hint := v.stallHint(stop); hint != "" {
		out += v.paint(styleYellow, hint)
	}
	var where []string
	if s.SessionID != "" {
		where = append(where, "session "+s.SessionID)
	}
	if s.EventLog != "" {
		log := s.EventLog
		if log == "-" {
			log = "stdout"
		}
		where = append(where, "log "+log)
	}
	if s.Sentinel != "" {
		where = append(where, "sentinel "+s.Sentinel)
	}
	if len(where) > 0 {
		out += v.paint(styleDim, "  "+strings.Join(where, " · ")) + "\n"
	}
	v.writeRaw(out)
}

type option struct{ id, kind, name string }

func options(ev event.Event) []option {
	raw, _ := ev["options"].([]any)
	var out []option
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		o := option{}
		o.id, _ = m["optionId"].(string)
		o.kind, _ = m["kind"].(string)
		o.name, _ = m["name"].(string)
		out = append(out, o)
	}
	return out
}

// describeOptions names each option once, in words: "once: Allow once".
func describeOptions(opts []option) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = sanitizeLine(o.id, 40)
		if l := o.label(); l != out[i] {
			out[i] += ": " + l
		}
	}
	return out
}

// AnswerCommand is the command that answers a file-handler request.
func AnswerCommand(permBase, optionID string) string {
	return "avenor answer --option " + shellQuote(optionID) + " " + shellQuote(permBase)
}

// ControlAnswerCommand is the command that answers a request through the
// control socket.
func ControlAnswerCommand(socket, requestID, optionID string) string {
	return "avenor control --socket " + shellQuote(socket) + " answer-permission " + shellQuote(requestID) + " " + shellQuote(optionID)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (v *View) rememberTool(ev event.Event) string {
	id := firstNonEmpty(str(ev, "toolCallId"), str(ev, "tool_use_id"))
	title := sanitizeLine(firstNonEmpty(str(ev, "title"), str(ev, "kind"), "tool"), 120)
	if id != "" {
		if _, ok := v.tools[id]; !ok {
			v.toolOrder = append(v.toolOrder, id)
			if len(v.toolOrder) > maxTools {
				delete(v.tools, v.toolOrder[0])
				v.toolOrder = v.toolOrder[1:]
			}
		}
		v.tools[id] = title
	}
	return title
}

func (v *View) toolTitle(ev event.Event) string {
	if t := str(ev, "title"); t != "" {
		return sanitizeLine(t, 120)
	}
	if t, ok := v.tools[firstNonEmpty(str(ev, "toolCallId"), str(ev, "tool_use_id"))]; ok {
		return t
	}
	return "tool"
}

// watchdogLine tells an avenor.watchdog firing (docs/unattended.md): what
// was hung for how long, and what follows.
func (v *View) watchdogLine(ev event.Event) string {
	idle := "?"
	if ms, err := strconv.ParseFloat(num(ev, "idle_for_ms"), 64); err == nil {
		idle = (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
	}
	what := "no event for " + idle
	if id := str(ev, "tool"); id != "" {
		title, ok := v.tools[id]
		if !ok {
			title = sanitizeLine(id, 120)
		}
		if str(ev, "kind") == "tool" {
			what = title + ": no CPU, no I/O for " + idle
		} else {
			what = title + ": no event for " + idle
		}
	}
	then := map[string]string{"warn": "the turn goes on", "cancel": "cancelling the turn", "restart": "restarting the turn"}[str(ev, "action")]
	if ev["restarts_exhausted"] == true {
		then = "restarts used up, cancelling the turn"
	}
	return "watchdog: " + what + " → " + firstNonEmpty(then, str(ev, "action"))
}

func kindSuffix(ev event.Event) string {
	if k := str(ev, "kind"); k != "" && k != str(ev, "title") {
		return " [" + k + "]"
	}
	return ""
}

// chunkText is a message chunk's text: content.text, or delta for
// non-ACP backends (docs/events.md#backend-events).
func chunkText(ev event.Event) string {
	if c, ok := ev["content"].(map[string]any); ok {
		if t, ok := c["text"].(string); ok {
			return t
		}
	}
	return str(ev, "delta")
}

func tokenText(u map[string]any) string {
	if u == nil {
		return ""
	}
	in, iok := u["input_tokens"]
	out, ook := u["output_tokens"]
	if !iok && !ook {
		if t, ok := u["total_tokens"]; ok {
			return anyNum(t) + " tokens"
		}
		return ""
	}
	return anyNum(in) + " in / " + anyNum(out) + " out tokens"
}

func formatDuration(d time.Duration) string {
	if d < time.Minute {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// sanitize drops terminal control characters from agent text, keeping
// newlines and tabs: what a runtime says must not move the cursor or
// change the terminal's state.
func sanitize(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0)
}

// sanitizeLine is sanitize on one line, newlines as spaces, at most n runes.
func sanitizeLine(s string, n int) string {
	s = strings.ReplaceAll(sanitize(s), "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func str(ev event.Event, key string) string {
	s, _ := ev[key].(string)
	return s
}

func num(ev event.Event, key string) string {
	v, ok := ev[key]
	if !ok {
		return ""
	}
	return anyNum(v)
}

func plusOne(ev event.Event, key string) string {
	switch n := ev[key].(type) {
	case int:
		return strconv.Itoa(n + 1)
	case float64:
		return strconv.FormatFloat(n+1, 'f', -1, 64)
	}
	return "?"
}

// addUsage adds u's token counts to sum (a new map when sum is nil).
func addUsage(sum, u map[string]any) map[string]any {
	if sum == nil {
		sum = map[string]any{}
	}
	for _, k := range []string{"input_tokens", "output_tokens", "total_tokens", "cached_read_tokens"} {
		n, ok := number(u[k])
		if !ok {
			continue
		}
		prev, _ := number(sum[k])
		sum[k] = prev + n
	}
	return sum
}

// number is a usage count as a float64 (events carry int64 in process,
// float64 once decoded).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func anyNum(v any) string {
	switch n := v.(type) {
	case int:
		return strconv.Itoa(n)
	case int64:
		return strconv.FormatInt(n, 10)
	case float64:
		return strconv.FormatFloat(n, 'f', -1, 64)
	case string:
		return n
	}
	return fmt.Sprint(v)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
