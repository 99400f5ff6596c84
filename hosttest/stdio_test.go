package hosttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// runStdin runs avenor with stdin as its standard input.
func (w *world) runStdin(stdin string, args ...string) result {
	w.t.Helper()
	cmd := exec.Command(bins.avenor, args...)
	cmd.Dir, cmd.Env = w.work, w.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

// TestPromptFileStdinAndEventsStdout: `--prompt-file -` reads the prompt
// from stdin and `--on-event -` writes the NDJSON to stdout, so avenor sits
// in a pipe.
func TestPromptFileStdinAndEventsStdout(t *testing.T) {
	w := newWorld(t)
	res := w.runStdin("say from stdin\n", "--backend", "scripted", "--prompt-file", "-", "--on-event", "-")
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("%v", res)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(res.stdout))
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("stdout line is not an event: %v: %q", err, sc.Text())
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 || evs[len(evs)-1]["event"] != "session.end" {
		t.Fatalf("stdout is not the event stream ending in session.end:\n%s", res.stdout)
	}
	if out, _ := evs[len(evs)-1]["final_output"].(string); out != "from stdin" {
		t.Errorf("final_output = %q: the prompt did not come from stdin", out)
	}
	// Without --on-event -, stdout stays empty as it always was.
	if res := w.runStdin("say quiet", "--backend", "scripted", "--prompt-file", "-"); res.code != 0 || res.stdout != "" || res.stderr != "" {
		t.Errorf("without --on-event -: %v", res)
	}
}
