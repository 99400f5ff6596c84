// Command fakeclaude stands in for Claude Code in the plugin's tests: it
// speaks `claude -p --input-format stream-json --output-format
// stream-json` and the control protocol, replaying recorded transcripts
// (../../testdata/*.txt) one turn per user line.
//
// The transcript of a turn is chosen by its prompt: "scenario:<name>"
// names one; otherwise a prompt mentioning "permission" plays
// permission.txt, "Count slowly" plays long.txt, anything else plain.txt.
// Transcript lines:
//
//	# comment
//	< {json}          write the line ({{session}} and {{cwd}} substituted)
//	<allow {json}     write it only if the last permission was allowed
//	<deny {json}      … denied (interrupt false)
//	<cancel {json}    … denied with interrupt true
//	<always {json}    … allowed with updatedPermissions
//	<!cancel {json}   … unless it was denied with interrupt true
//	> control_response   wait for the answer to the last control_request
//	stream N 50ms     N text deltas ("tick i ") every 50ms, until interrupted
//	<int {json}       write it only if the turn was interrupted
//	<done {json}      … only if it was not
//	sleep 100ms
//
// Environment: FAKECLAUDE_TRANSCRIPTS (directory, required),
// FAKECLAUDE_STATE (where sessions are remembered, for --resume),
// FAKECLAUDE_LOG (appends argv and every stdin line), FAKECLAUDE_VERSION
// (what --version prints), FAKECLAUDE_EXIT=early (exit 2 at once),
// FAKECLAUDE_IGNORE_INTERRUPT=1 (never answer interrupt), and
// FAKECLAUDE_CHILD=1 (start a sleeping child in the process group, to show
// that the group is reaped).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/avenor-go/avenor/plugins/claude/internal/fakecatalog"
)

type input struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype string `json:"subtype"`
	} `json:"request"`
	Response struct {
		RequestID string `json:"request_id"`
		Response  struct {
			Behavior           string          `json:"behavior"`
			Interrupt          bool            `json:"interrupt"`
			UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
		} `json:"response"`
	} `json:"response"`
	Message struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	turn int // which user line this is, counted from 1
}

type fake struct {
	session, cwd, dir string
	outMu             sync.Mutex
	users             chan input
	responses         chan input
	interrupts        chan int // the user line each interrupt came after
	logf              func(string)
}

func main() {
	args := os.Args[1:]
	logPath := os.Getenv("FAKECLAUDE_LOG")
	var logMu sync.Mutex
	logf := func(s string) {
		if logPath == "" {
			return
		}
		logMu.Lock()
		defer logMu.Unlock()
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	if fakecatalog.Answer(args) {
		return
	}
	if len(args) == 1 && args[0] == "--version" {
		v := os.Getenv("FAKECLAUDE_VERSION")
		if v == "" {
			v = "2.1.332 (Claude Code)"
		}
		fmt.Println(v)
		return
	}
	b, _ := json.Marshal(args)
	logf("argv " + string(b))
	if os.Getenv("FAKECLAUDE_EXIT") == "early" {
		fmt.Fprintln(os.Stderr, "fakeclaude: crashed on purpose before reading stdin")
		os.Exit(2)
	}
	if os.Getenv("FAKECLAUDE_CHILD") == "1" {
		_ = exec.Command("sleep", "300").Start()
	}
	session, resume := "", false
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--session-id":
			session = args[i+1]
		case "--resume":
			session, resume = args[i+1], true
		}
	}
	state := os.Getenv("FAKECLAUDE_STATE")
	if state == "" {
		state = filepath.Join(os.TempDir(), "fakeclaude-state")
	}
	_ = os.MkdirAll(state, 0o755)
	if resume {
		if _, err := os.Stat(filepath.Join(state, session)); err != nil {
			// As Claude Code 2.1.332 does, before answering anything.
			fmt.Printf(`{"type":"result","subtype":"error_during_execution","duration_ms":0,"is_error":true,"num_turns":0,"stop_reason":null,"session_id":%q,"total_cost_usd":0}`+"\n", session)
			fmt.Fprintf(os.Stderr, "No conversation found with session ID: %s\n", session)
			os.Exit(1)
		}
	} else if session != "" {
		_ = os.WriteFile(filepath.Join(state, session), []byte("{}"), 0o644)
	}
	cwd, _ := os.Getwd()
	f := &fake{session: session, cwd: cwd, dir: os.Getenv("FAKECLAUDE_TRANSCRIPTS"), users: make(chan input, 16),
		responses: make(chan input, 16), interrupts: make(chan int, 16), logf: logf}
	go f.readInput()
	for u := range f.users {
		text := ""
		for _, c := range u.Message.Content {
			text += c.Text
		}
		if err := f.play(scenario(text), u.turn); err != nil {
			fmt.Fprintln(os.Stderr, "fakeclaude:", err)
			os.Exit(3)
		}
	}
}

func scenario(prompt string) string {
	if i := strings.Index(prompt, "scenario:"); i >= 0 {
		return strings.Fields(prompt[i+len("scenario:"):])[0]
	}
	switch {
	case strings.Contains(strings.ToLower(prompt), "permission"):
		return "permission"
	case strings.Contains(prompt, "Count slowly"):
		return "long"
	}
	return "plain"
}

func (f *fake) readInput() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	ignore := os.Getenv("FAKECLAUDE_IGNORE_INTERRUPT") == "1"
	users := 0
	for sc.Scan() {
		f.logf("stdin " + sc.Text())
		var in input
		if json.Unmarshal(sc.Bytes(), &in) != nil {
			continue
		}
		switch {
		case in.Type == "user":
			users++
			in.turn = users
			f.users <- in
		case in.Type == "control_response":
			f.responses <- in
		case in.Type == "control_request" && in.Request.Subtype == "initialize":
			f.write(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"commands":[],"models":[]}}}`, in.RequestID))
		case in.Type == "control_request" && in.Request.Subtype == "interrupt":
			if ignore {
				continue
			}
			f.write(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"still_queued":[]}}}`, in.RequestID))
			// It interrupts the turn of the last user line, even one
			// still queued, as Claude Code does (interrupt_cancel_queued).
			f.interrupts <- users
		case in.Type == "control_request":
			f.write(fmt.Sprintf(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"unsupported"}}`, in.RequestID))
		}
	}
	close(f.users)
}

func (f *fake) write(line string) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	fmt.Println(line)
}

// interrupted reports whether an interrupt of turn came; those of earlier
// turns are dropped.
func (f *fake) interrupted(turn int) bool {
	for {
		select {
		case t := <-f.interrupts:
			if t == turn {
				return true
			}
		default:
			return false
		}
	}
}

// play runs one transcript.
func (f *fake) play(name string, turn int) error {
	data, err := os.ReadFile(filepath.Join(f.dir, name+".txt"))
	if err != nil {
		return err
	}
	decision := ""
	interrupted := f.interrupted(turn)
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		rest = strings.NewReplacer("{{session}}", f.session, "{{cwd}}", f.cwd).Replace(rest)
		switch kw {
		case "<":
			f.write(rest)
		case "<allow", "<deny", "<cancel", "<always":
			if kw[1:] == decision {
				f.write(rest)
			}
		case "<!cancel":
			if decision != "cancel" {
				f.write(rest)
			}
		case "<int", "<done":
			if (kw == "<int") == interrupted {
				f.write(rest)
			}
		case ">":
			select {
			case r := <-f.responses:
				decision = r.Response.Response.Behavior
				switch {
				case decision == "deny" && r.Response.Response.Interrupt:
					decision = "cancel"
					interrupted = true
				case decision == "allow" && len(r.Response.Response.UpdatedPermissions) > 0:
					decision = "always"
				}
			case <-time.After(60 * time.Second):
				return fmt.Errorf("no control_response within 60s")
			}
		case "stream":
			n, d, err := streamArgs(rest)
			if err != nil {
				return err
			}
			for i := 1; i <= n && !interrupted; i++ {
				f.write(fmt.Sprintf(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tick %d "}},"session_id":%q}`, i, f.session))
				select {
				case t := <-f.interrupts:
					interrupted = t == turn
				case <-time.After(d):
				}
			}
		case "sleep":
			d, err := time.ParseDuration(rest)
			if err != nil {
				return err
			}
			time.Sleep(d)
		default:
			return fmt.Errorf("%s.txt: bad line %q", name, line)
		}
	}
	return nil
}

func streamArgs(s string) (int, time.Duration, error) {
	a, b, _ := strings.Cut(s, " ")
	n, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, err
	}
	d, err := time.ParseDuration(b)
	return n, d, err
}
