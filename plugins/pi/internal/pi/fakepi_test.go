package pi

// The fake pi: the test binary itself, re-executed with PI_FAKE set. It
// speaks pi's RPC mode by replaying a recorded transcript (testdata/*.txt):
//
//	<- {json}            write the frame; $ID is the id of the last command matched
//	-> type [k=v ...]    wait for the next command of that type (get_state is
//	                     always answered at once); prompt is acknowledged at once
//	[k=v] <- {json}      write the frame only if the last command matched had k=v
//	sleep 50ms           pause
//
// An abort that arrives while the script is not waiting for one ends the
// turn the way pi does (aborted message, turn_end, agent_end, response). In
// PI_FAKE_SCRIPTS mode each prompt runs the script named after its message.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type fakeCmd map[string]any

func (c fakeCmd) str(k string) string {
	switch v := c[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

type fakePi struct {
	out     *os.File
	cmds    chan fakeCmd
	lastID  string
	last    fakeCmd
	session string
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fake pi: "+format+"\n", args...)
	os.Exit(2)
}

func runFakePi() {
	args := os.Args[1:]
	for _, a := range args {
		if a == "--version" {
			v := os.Getenv("PI_FAKE_VERSION")
			if v == "" {
				v = "0.73.1"
			}
			fmt.Println(v)
			os.Exit(0)
		}
	}
	if f := os.Getenv("PI_FAKE_RECORD"); f != "" {
		rec := map[string]any{"args": args, "PI_AGENT": os.Getenv("PI_AGENT"), "PI_AGENT_PROFILE": os.Getenv("PI_AGENT_PROFILE"),
			"PI_AGENT_SET": os.Getenv("PI_AGENT") != ""}
		b, _ := json.Marshal(rec)
		_ = os.WriteFile(f, b, 0o600)
	}
	if msg := os.Getenv("PI_FAKE_EXIT"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(3)
	}
	p := &fakePi{out: os.Stdout, cmds: make(chan fakeCmd, 16), session: "fake-session-1"}
	p.sessionFromArgs(args)
	go p.readStdin()
	if dir := os.Getenv("PI_FAKE_SCRIPTS"); dir != "" {
		for {
			c := p.next()
			p.lastID, p.last = c.str("id"), c
			if c.str("type") == "abort" {
				p.emit(fmt.Sprintf(`{"type":"response","command":"abort","success":true,"id":%q}`, p.lastID))
				continue
			}
			if c.str("type") != "prompt" {
				continue
			}
			p.emit(fmt.Sprintf(`{"type":"response","command":"prompt","success":true,"id":%q}`, p.lastID))
			p.play(filepath.Join(dir, c.str("message")+".txt"))
		}
	}
	p.play(os.Getenv("PI_FAKE_SCRIPT"))
	for range p.cmds { // until stdin EOF
	}
	os.Exit(0)
}

// sessionFromArgs keeps a session file under --session-dir, or takes the
// id of --session, as pi does.
func (p *fakePi) sessionFromArgs(args []string) {
	var dir, file string
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--session-dir":
			dir = args[i+1]
		case "--session":
			file = args[i+1]
		}
	}
	if file != "" {
		base := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		_, p.session, _ = strings.Cut(base, "_")
		return
	}
	if dir != "" {
		p.session = fmt.Sprintf("fake-%d", time.Now().UnixNano())
		_ = os.MkdirAll(dir, 0o700)
		_ = os.WriteFile(filepath.Join(dir, "2026-11-29T10-00-00_"+p.session+".jsonl"), []byte("{}\n"), 0o600)
	}
}

func (p *fakePi) readStdin() {
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var c fakeCmd
			if json.Unmarshal(line, &c) != nil {
				fail("bad command line %q", line)
			}
			if c.str("type") == "get_state" {
				p.emit(fmt.Sprintf(`{"type":"response","command":"get_state","success":true,"id":%q,"data":{"sessionId":%q,"isStreaming":false}}`, c.str("id"), p.session))
				continue
			}
			p.cmds <- c
		}
		if err != nil {
			close(p.cmds)
			return
		}
	}
}

func (p *fakePi) emit(line string) {
	if _, err := p.out.WriteString(line + "\n"); err != nil {
		os.Exit(0)
	}
}

func (p *fakePi) play(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			cond, rest, _ := strings.Cut(line[1:], "] ")
			k, v, _ := strings.Cut(cond, "=")
			if p.last.str(k) != v {
				continue
			}
			line = rest
		}
		switch {
		case strings.HasPrefix(line, "<- "):
			if p.interrupted() {
				return
			}
			p.emit(strings.ReplaceAll(line[3:], "$ID", p.lastID))
		case strings.HasPrefix(line, "-> "):
			want := strings.Fields(line[3:])
			c := p.next()
			if c.str("type") == "abort" && want[0] != "abort" {
				p.pushBack(c)
				p.interrupted()
				return
			}
			if c.str("type") != want[0] {
				fail("want command %s, got %v", want[0], c)
			}
			for _, kv := range want[1:] {
				k, v, _ := strings.Cut(kv, "=")
				if c.str(k) != v {
					fail("command %v: want %s=%s", c, k, v)
				}
			}
			p.lastID, p.last = c.str("id"), c
			if want[0] == "prompt" {
				p.emit(fmt.Sprintf(`{"type":"response","command":"prompt","success":true,"id":%q}`, p.lastID))
			}
		case strings.HasPrefix(line, "sleep "):
			d, _ := time.ParseDuration(strings.TrimPrefix(line, "sleep "))
			select {
			case c, ok := <-p.cmds:
				if !ok {
					os.Exit(0)
				}
				p.pushBack(c)
				if p.interrupted() {
					return
				}
			case <-time.After(d):
			}
		default:
			fail("bad script line %q", line)
		}
	}
}

// pending holds a command read while sleeping.
var pending []fakeCmd

func (p *fakePi) pushBack(c fakeCmd) { pending = append(pending, c) }

// next is the next command, pushed back ones first.
func (p *fakePi) next() fakeCmd {
	if len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		return c
	}
	c, ok := <-p.cmds
	if !ok {
		os.Exit(0)
	}
	return c
}

// interrupted answers an abort that arrived while the script ran.
func (p *fakePi) interrupted() bool {
	for drained := false; !drained; {
		select {
		case c, ok := <-p.cmds:
			if !ok {
				os.Exit(0)
			}
			pending = append(pending, c)
		default:
			drained = true
		}
	}
	for i, c := range pending {
		if c.str("type") == "abort" {
			pending = append(pending[:i], pending[i+1:]...)
			p.emit(`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"aborted","errorMessage":"Request was aborted"}}`)
			p.emit(`{"type":"turn_end"}`)
			p.emit(`{"type":"agent_end","messages":[]}`)
			p.emit(fmt.Sprintf(`{"type":"response","command":"abort","success":true,"id":%q}`, c.str("id")))
			return true
		}
	}
	return false
}
