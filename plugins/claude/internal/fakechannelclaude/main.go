// Command fakechannelclaude stands in for Claude Code 2.1.332 started with
// --dangerously-load-development-channels server:<name> in the
// claude-channel backend's tests. What it does mirrors the real CLI where
// the backend depends on it:
//
//   - `--version` prints "2.1.332 (Claude Code)";
//   - it shows the development-channel warning ("WARNING: Loading
//     development channels", option 1 "I am using this for local
//     development") and waits for Enter;
//   - a server not approved by --settings '{"enabledMcpjsonServers":[…]}'
//     is asked about first ("New MCP server found in this project"), and
//     Enter leaves it out, as the real dialog's preselected answer does;
//   - it reads ./.mcp.json, starts the named server's command over stdio
//     and speaks MCP to it as a client: initialize (asking for protocol
//     2025-06-18), notifications/initialized, tools/list; the channel is
//     on only if the server declares experimental["claude/channel"];
//   - it draws an idle input box ("───" rule, "❯" line) and turns each
//     submitted line (bracketed paste + Enter) and each
//     notifications/claude/channel into a turn; channel messages that
//     arrive during a turn are queued for the next, as in Claude Code;
//   - a turn writes the JSONL transcript
//     (~/.claude/projects/<key>/<session>.jsonl), shows "esc to interrupt"
//     while busy, calls avenor_report then avenor_finish, and ends with a
//     system/turn_duration record.
//
// Prompts choose the turn: "permission" sends
// notifications/claude/channel/permission_request {request_id "abcde",
// tool_name Bash, …}, shows a "Do you want to proceed?" dialog and waits
// for notifications/claude/channel/permission (or keys 1 / Esc; with
// "norelay" it does not relay, as where Claude Code's allow_channels policy
// is off); "slow"
// stays busy until Esc Esc; "fail" / "blocked" finish with that status;
// "nofinish" never calls avenor_finish.
//
// FAKECHANNEL_LOG appends what it does (for test failure output).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/plugins/claude/internal/fakecatalog"
)

var logf = func(string, ...any) {}

func main() {
	args := os.Args[1:]
	if fakecatalog.Answer(args) {
		return
	}
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("2.1.332 (Claude Code)")
		return
	}
	if p := os.Getenv("FAKECHANNEL_LOG"); p != "" {
		if f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			var mu sync.Mutex
			logf = func(format string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(f, time.Now().Format("15:04:05.000 ")+format+"\n", a...)
			}
		}
	}
	var server, session string
	var settings struct {
		EnabledMcpjsonServers []string `json:"enabledMcpjsonServers"`
	}
	for i := 0; i < len(args)-1; i++ {
		switch args[i] {
		case "--settings":
			_ = json.Unmarshal([]byte(args[i+1]), &settings)
		case "--dangerously-load-development-channels":
			server = strings.TrimPrefix(args[i+1], "server:")
		case "--session-id":
			session = args[i+1]
		}
	}
	logf("argv %q", args)
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin // stty sets the terminal on its stdin
	if err := stty.Run(); err != nil {
		logf("stty: %v", err)
	}
	f := &fake{session: session, keys: make(chan key, 64), notes: make(chan rpc, 64), waiting: map[int]chan rpc{}}
	go f.readKeys(os.Stdin)

	if server != "" && !slices.Contains(settings.EnabledMcpjsonServers, server) {
		// As Claude Code: an unapproved project server is asked about, and
		// Enter takes the preselected "Continue without using this MCP server".
		f.draw("New MCP server found in this project: "+server, "", "    Use this MCP server",
			"    Use this and all future MCP servers in this project", "  ❯ Continue without using this MCP server")
		for k := range f.keys {
			if k.kind == "enter" {
				break
			}
		}
		logf("MCP server %s not approved: continuing without it", server)
		server = ""
	}
	if server != "" {
		f.draw("WARNING: Loading development channels", "",
			"--dangerously-load-development-channels is for local channel development only.", "Channels: server:"+server, "",
			"❯ 1. I am using this for local development", "  2. Exit")
		for k := range f.keys {
			if k.kind == "enter" {
				break
			}
		}
		logf("development channel accepted")
		if err := f.startServer(server); err != nil {
			logf("channel server: %v", err)
		}
	}
	f.run()
}

type key struct {
	kind string // text, enter, esc
	text string
}

type rpc struct {
	ID     *int            `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

type fake struct {
	session string
	keys    chan key
	notes   chan rpc // notifications from the server

	srvIn   io.Writer
	writeMu sync.Mutex
	mu      sync.Mutex
	nextID  int
	waiting map[int]chan rpc
	channel bool
	queue   []string
	input   string
}

// readKeys turns raw terminal bytes into keys: a bracketed paste is one
// text key, CR is Enter, a lone ESC is Esc.
func (f *fake) readKeys(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadByte()
		if err != nil {
			close(f.keys)
			return
		}
		switch b {
		case '\r', '\n':
			f.keys <- key{kind: "enter"}
		case 0x1b:
			// A paste arrives in one write, so its start is buffered with
			// the ESC; a lone ESC (a key) has nothing after it.
			if next, _ := br.Peek(min(5, br.Buffered())); string(next) == "[200~" {
				_, _ = br.Discard(5)
				var text []byte
				for {
					c, err := br.ReadByte()
					if err != nil {
						return
					}
					text = append(text, c)
					if strings.HasSuffix(string(text), "\x1b[201~") {
						break
					}
				}
				f.keys <- key{kind: "text", text: strings.TrimSuffix(string(text), "\x1b[201~")}
				continue
			}
			f.keys <- key{kind: "esc"}
		default:
			f.keys <- key{kind: "text", text: string(b)}
		}
	}
}

func (f *fake) draw(lines ...string) {
	var b strings.Builder
	b.WriteString("\x1b[2J\x1b[H")
	for _, l := range lines {
		b.WriteString(l + "\r\n")
	}
	_, _ = os.Stdout.WriteString(b.String())
}

var rule = strings.Repeat("─", 80)

func (f *fake) drawIdle(status string) {
	f.draw(status, "", rule, "❯ "+f.input, rule, "  ⏵⏵ default mode")
}

func (f *fake) drawBusy(prompt string) {
	f.draw("> "+firstLine(prompt), "", "✻ Working… (3s · esc to interrupt)", "", rule, "❯ ", rule)
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// startServer runs the .mcp.json entry and does the MCP handshake.
func (f *fake) startServer(name string) error {
	data, err := os.ReadFile(".mcp.json")
	if err != nil {
		return err
	}
	var cfg struct {
		McpServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return err
	}
	e, ok := cfg.McpServers[name]
	if !ok {
		return fmt.Errorf("server %q is not in .mcp.json", name)
	}
	logf("server command %s", e.Command) // not the args: they hold the token
	cmd := exec.Command(e.Command, e.Args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if p := os.Getenv("FAKECHANNEL_LOG"); p != "" {
		if lf, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			cmd.Stderr = lf
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	f.srvIn = in
	go f.readServer(out)
	res, err := f.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "claude-code", "version": "2.1.332"}})
	if err != nil {
		return err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Experimental map[string]any `json:"experimental"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(res, &init)
	logf("initialize: protocol %s, experimental %v", init.ProtocolVersion, init.Capabilities.Experimental)
	_, f.channel = init.Capabilities.Experimental["claude/channel"]
	f.notify("notifications/initialized", map[string]any{})
	if _, err := f.call("tools/list", map[string]any{}); err != nil {
		return err
	}
	return nil
}

func (f *fake) readServer(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var m rpc
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			logf("bad line from server: %q", sc.Text())
			continue
		}
		if m.ID != nil && m.Method == "" {
			f.mu.Lock()
			ch := f.waiting[*m.ID]
			delete(f.waiting, *m.ID)
			f.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		if m.Method != "" && m.ID == nil {
			logf("notification %s %s", m.Method, m.Params)
			f.notes <- m
		}
	}
	logf("server stdout closed")
}

func (f *fake) send(v any) {
	data, _ := json.Marshal(v)
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	_, _ = f.srvIn.Write(append(data, '\n'))
}

func (f *fake) notify(method string, params any) {
	f.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (f *fake) call(method string, params any) (json.RawMessage, error) {
	if f.srvIn == nil {
		return nil, fmt.Errorf("no server")
	}
	f.mu.Lock()
	f.nextID++
	id := f.nextID
	ch := make(chan rpc, 1)
	f.waiting[id] = ch
	f.mu.Unlock()
	f.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case m := <-ch:
		if len(m.Error) > 0 {
			return nil, fmt.Errorf("%s: %s", method, m.Error)
		}
		logf("%s → %s", method, m.Result)
		return m.Result, nil
	case <-time.After(20 * time.Second):
		return nil, fmt.Errorf("%s: no answer", method)
	}
}

// channelText is the content of a notifications/claude/channel.
func channelText(m rpc) (string, bool) {
	if m.Method != "notifications/claude/channel" {
		return "", false
	}
	var p struct {
		Content string            `json:"content"`
		Meta    map[string]string `json:"meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return "", false
	}
	return p.Content, true
}

func (f *fake) run() {
	f.drawIdle("")
	for {
		if len(f.queue) > 0 {
			p := f.queue[0]
			f.queue = f.queue[1:]
			f.turn(p)
			f.drawIdle("✻ Worked for 1s")
			continue
		}
		select {
		case k, ok := <-f.keys:
			if !ok {
				return
			}
			switch k.kind {
			case "text":
				f.input += k.text
				f.drawIdle("")
			case "enter":
				if f.input != "" {
					f.queue = append(f.queue, f.input)
					f.input = ""
				}
			}
		case m := <-f.notes:
			if text, ok := channelText(m); ok && f.channel {
				f.queue = append(f.queue, text)
			}
		}
	}
}

// transcript appends records to the session's JSONL file.
func (f *fake) transcript(recs ...map[string]any) {
	dir := os.Getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		dir = filepath.Join(os.Getenv("HOME"), ".claude")
	}
	cwd, _ := os.Getwd()
	key := regexp.MustCompile(`[^A-Za-z0-9-]`).ReplaceAllString(cwd, "-")
	p := filepath.Join(dir, "projects", key, f.session+".jsonl")
	_ = os.MkdirAll(filepath.Dir(p), 0o755)
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		logf("transcript: %v", err)
		return
	}
	defer fh.Close()
	for _, r := range recs {
		r["sessionId"] = f.session
		data, _ := json.Marshal(r)
		_, _ = fh.Write(append(data, '\n'))
	}
}

func assistant(blocks ...map[string]any) map[string]any {
	return map[string]any{"type": "assistant", "message": map[string]any{"id": fmt.Sprintf("msg_%d", time.Now().UnixNano()), "role": "assistant", "content": blocks}}
}

func (f *fake) turn(prompt string) {
	logf("turn %q", prompt)
	f.drawBusy(prompt)
	f.transcript(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	status, text := "done", "echo: "+firstLine(prompt)
	switch {
	case strings.Contains(prompt, "slow"):
		for k := range f.keys {
			if k.kind == "esc" {
				logf("interrupted")
				f.transcript(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "[Request interrupted by user]"}})
				return
			}
		}
		return
	case strings.Contains(prompt, "permission"):
		allowed := f.askPermission(!strings.Contains(prompt, "norelay"))
		if allowed {
			f.transcript(assistant(map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "echo hi"}}),
				map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}}}})
			text = "allowed: hi"
		} else {
			text, status = "permission denied", "blocked"
		}
	case strings.Contains(prompt, "fail"):
		status = "failed"
	case strings.Contains(prompt, "blocked"):
		status = "blocked"
	}
	if f.channel {
		_, _ = f.call("tools/call", map[string]any{"name": "avenor_report", "arguments": map[string]any{"state": "working", "payload": "working on it"}})
	}
	f.transcript(assistant(map[string]any{"type": "text", "text": text}))
	if f.channel && !strings.Contains(prompt, "nofinish") {
		_, _ = f.call("tools/call", map[string]any{"name": "avenor_finish", "arguments": map[string]any{
			"status": status, "summary": text, "files_changed": []string{"out.txt"}}})
	}
	time.Sleep(50 * time.Millisecond)
	f.transcript(map[string]any{"type": "system", "subtype": "turn_duration", "durationMs": 1000})
}

// askPermission shows the dialog and relays it to the channel; the first
// answer (channel or keys) wins.
func (f *fake) askPermission(relay bool) bool {
	f.draw("⏺ Bash(echo hi)", "", rule, " Bash command", "", "   echo hi", "", " Do you want to proceed?",
		" ❯ 1. Yes", "   2. No, and tell Claude what to do differently (esc)", "", " Esc to cancel")
	if f.channel && relay {
		f.notify("notifications/claude/channel/permission_request", map[string]any{
			"request_id": "abcde", "tool_name": "Bash", "description": "Run echo hi", "input_preview": `{"command":"echo hi"}`})
	}
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m := <-f.notes:
			if m.Method == "notifications/claude/channel/permission" {
				var p struct {
					RequestID string `json:"request_id"`
					Behavior  string `json:"behavior"`
				}
				_ = json.Unmarshal(m.Params, &p)
				if p.RequestID == "abcde" {
					logf("permission %s via channel", p.Behavior)
					return p.Behavior == "allow"
				}
			} else if text, ok := channelText(m); ok {
				f.queue = append(f.queue, text)
			}
		case k, ok := <-f.keys:
			if !ok {
				return false
			}
			if k.kind == "text" && k.text == "1" {
				return true
			}
			if k.kind == "esc" {
				return false
			}
		case <-timeout:
			return false
		}
	}
}
